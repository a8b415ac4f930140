/* NPB EP: Gaussian deviates by the Marsaglia polar method from the NPB
 * generator, tallied in square annuli; batches are dealt out to the ranks
 * and the sums meet in one final allreduce. */
#include "npb_common.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MK      16 /* log2 of pairs per batch */
#define NK      (1 << MK)
#define NQ      10 /* annuli counted */
#define EP_SEED 271828183.0
#define EP_EPS  1.0e-8

struct ep_class {
	char cls;
	int m;
	double sx, sy;
};

static const struct ep_class classes[] = {
    {'S', 24, -3.247834652034740e+3, -6.958407078382297e+3},
    {'W', 25, -2.863319731645753e+3, -6.320053679109499e+3},
    {'A', 28, -4.295875165629892e+3, -1.580732573678431e+4},
};

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, nprocs;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

	struct npb_args args;
	npb_parse_args("ep", argc, argv, &args);
	const struct ep_class *c = NULL;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (classes[i].cls == args.cls)
			c = &classes[i];
	if (!c)
		npb_die("ep: no class %c", args.cls);

	long nbatches = 1L << (c->m - MK);
	/* Any rank count works: batches are split as evenly as possible. */
	long first = nbatches * rank / nprocs, last = nbatches * (rank + 1) / nprocs;
	double *x = malloc(2 * NK * sizeof(double));
	if (!x)
		npb_die("ep: out of memory");

	if (rank == 0)
		printf("\n NAS Parallel Benchmarks (gamma project implementation) - EP Benchmark\n"
		       " Number of random numbers generated: %15.0f\n Number of active processes: "
		       "%d\n",
		       pow(2.0, c->m + 1), nprocs);

	/* a^(2*NK): the stride between the seeds of consecutive batches. */
	double batch_mult = npb_pow46(NPB_A, 2 * NK);

	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	double sx = 0, sy = 0, q[NQ] = {0};
	for (long b = first; b < last; b++) {
		double seed = EP_SEED;
		double skip = npb_pow46(batch_mult, (uint64_t)b);
		randlc(&seed, skip);
		vranlc(2 * NK, &seed, NPB_A, x);
		for (int i = 0; i < NK; i++) {
			double x1 = 2.0 * x[2 * i] - 1.0, x2 = 2.0 * x[2 * i + 1] - 1.0;
			double t1 = x1 * x1 + x2 * x2;
			if (t1 <= 1.0) {
				double t2 = sqrt(-2.0 * log(t1) / t1);
				double t3 = x1 * t2, t4 = x2 * t2;
				int l = (int)fmax(fabs(t3), fabs(t4));
				q[l] += 1.0;
				sx += t3;
				sy += t4;
			}
		}
	}
	double local[NQ + 2], global[NQ + 2];
	local[0] = sx;
	local[1] = sy;
	for (int i = 0; i < NQ; i++)
		local[2 + i] = q[i];
	MPI_Allreduce(local, global, NQ + 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	double tlocal = MPI_Wtime() - t0, t;
	MPI_Allreduce(&tlocal, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

	sx = global[0];
	sy = global[1];
	double gc = 0;
	for (int i = 0; i < NQ; i++)
		gc += global[2 + i];

	double ref_sx = args.have_override ? args.override_value : c->sx;
	bool ok = npb_close("sx", sx, ref_sx, EP_EPS);
	ok = npb_close("sy", sy, c->sy, EP_EPS) && ok;
	if (rank == 0) {
		printf(" Gaussian pairs = %15.0f\n Counts:\n", gc);
		for (int i = 0; i < NQ; i++)
			printf("%3d%15.0f\n", i, global[2 + i]);
		struct npb_report r = {
		    .name = "EP",
		    .cls = c->cls,
		    .size = {1L << (c->m + 1), 0, 0},
		    .iterations = 0,
		    .seconds = t,
		    .mops = pow(2.0, c->m + 1) / t / 1.0e6,
		    .optype = "Random numbers generated",
		    .verified = ok,
		    .nprocs = nprocs,
		};
		npb_print_report(&r);
	}
	free(x);
	MPI_Finalize();
	return ok ? 0 : 1;
}
