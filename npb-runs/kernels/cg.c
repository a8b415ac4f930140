/* NPB CG: inverse power iteration on the NPB random sparse symmetric matrix,
 * each step solved approximately by 25 unpreconditioned conjugate-gradient
 * iterations. The matrix is split over a 2D process grid (rows x columns,
 * columns = rows or 2*rows); a mat-vec is a local product, a sum across the
 * process row, and an exchange with the transpose partner, as in NPB. */
#include "npb_common.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CG_ITERS 25
#define RCOND    0.1
#define CG_SEED  314159265.0
#define CG_EPS   1.0e-10

struct cg_class {
	char cls;
	int na, nonzer, niter;
	double shift, zeta;
};

static const struct cg_class classes[] = {
    {'S', 1400, 7, 15, 10.0, 8.5971775078648},
    {'W', 7000, 8, 15, 12.0, 10.362595087124},
    {'A', 14000, 11, 15, 20.0, 17.130235054029},
};

/* The process grid and this rank's block of the matrix (local CSR, column
 * indices relative to the first column of the block). */
struct cg {
	int na, nprows, npcols, pr, pc;
	int firstrow, nrows, firstcol, ncols;
	int *rowstr, *colidx;
	double *a;
	MPI_Comm row_comm;
	int partner;            /* world rank holding the transpose block */
	int send_off, send_len; /* the part of a row-block result the partner needs */
	double *w, *wsum;       /* row-block partial and summed products */
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		npb_die("cg: out of memory (%zu bytes)", n);
	return p;
}

static int col_bound(const struct cg *g, int k)
{
	return (int)((long)k * g->na / g->npcols);
}

/* ---- matrix generation (the NPB makea procedure) ---- */

/* One sparse random vector of nz distinct positions in 1..n (values in (0,1)). */
static int random_sparse_vector(int n, int nz, int pow2, double *tran, double *v, int *iv)
{
	int nzv = 0;
	while (nzv < nz) {
		double val = randlc(tran, NPB_A);
		double loc = randlc(tran, NPB_A);
		int i = (int)(pow2 * loc) + 1;
		if (i > n)
			continue;
		bool dup = false;
		for (int k = 0; k < nzv && !dup; k++)
			dup = iv[k] == i;
		if (dup)
			continue;
		v[nzv] = val;
		iv[nzv] = i;
		nzv++;
	}
	return nzv;
}

/* Adds entry (row, col) += val into the row's sorted column list. */
static void row_add(int *cols, double *vals, int *len, int col, double val)
{
	int k = 0;
	while (k < *len && cols[k] < col)
		k++;
	if (k < *len && cols[k] == col) {
		vals[k] += val;
		return;
	}
	memmove(cols + k + 1, cols + k, (size_t)(*len - k) * sizeof(int));
	memmove(vals + k + 1, vals + k, (size_t)(*len - k) * sizeof(double));
	cols[k] = col;
	vals[k] = 0.0;
	vals[k] += val;
	(*len)++;
}

/* The matrix is a weighted sum of outer products of na sparse vectors, each
 * with an extra 0.5 on its own index, plus (rcond - shift) on the diagonal.
 * Every rank generates all vectors (the sequence is serial) and keeps only
 * its block. */
static void make_matrix(struct cg *g, int nonzer, double shift, double *tran)
{
	int n = g->na, w = nonzer + 1;
	int *arow = xmalloc(sizeof(int) * n), *acol = xmalloc(sizeof(int) * n * w);
	double *aelt = xmalloc(sizeof(double) * n * w);
	int pow2 = 1;
	while (pow2 < n)
		pow2 *= 2;

	for (int i = 0; i < n; i++) {
		double v[w];
		int iv[w];
		int nzv = random_sparse_vector(n, nonzer, pow2, tran, v, iv);
		bool found = false;
		for (int k = 0; k < nzv; k++)
			if (iv[k] == i + 1) {
				v[k] = 0.5;
				found = true;
			}
		if (!found) {
			v[nzv] = 0.5;
			iv[nzv] = i + 1;
			nzv++;
		}
		arow[i] = nzv;
		for (int k = 0; k < nzv; k++) {
			acol[i * w + k] = iv[k] - 1;
			aelt[i * w + k] = v[k];
		}
	}

	/* Capacity of each of my rows: every vector touching row j adds at most arow[i]. */
	int lo = g->firstrow, hi = g->firstrow + g->nrows;
	int *cap = calloc((size_t)g->nrows + 1, sizeof(int));
	if (!cap)
		npb_die("cg: out of memory");
	for (int i = 0; i < n; i++)
		for (int k = 0; k < arow[i]; k++) {
			int j = acol[i * w + k];
			if (j >= lo && j < hi)
				cap[j - lo + 1] += arow[i];
		}
	for (int j = 0; j < g->nrows; j++)
		cap[j + 1] += cap[j];
	int *cols = xmalloc(sizeof(int) * cap[g->nrows]);
	double *vals = xmalloc(sizeof(double) * cap[g->nrows]);
	int *len = calloc((size_t)g->nrows, sizeof(int));
	if (!len)
		npb_die("cg: out of memory");

	double size = 1.0, ratio = pow(RCOND, 1.0 / n);
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < arow[i]; k++) {
			int j = acol[i * w + k];
			if (j < lo || j >= hi)
				continue;
			double scale = size * aelt[i * w + k];
			for (int m = 0; m < arow[i]; m++) {
				int jcol = acol[i * w + m];
				double va = aelt[i * w + m] * scale;
				if (jcol == j && j == i)
					va = va + RCOND - shift;
				row_add(cols + cap[j - lo], vals + cap[j - lo], &len[j - lo], jcol,
				        va);
			}
		}
		size *= ratio;
	}

	/* Keep my column block only, columns made local. */
	int nnz = 0;
	g->rowstr = xmalloc(sizeof(int) * (g->nrows + 1));
	for (int j = 0; j < g->nrows; j++)
		for (int k = 0; k < len[j]; k++) {
			int c = cols[cap[j] + k];
			nnz += c >= g->firstcol && c < g->firstcol + g->ncols;
		}
	g->colidx = xmalloc(sizeof(int) * nnz);
	g->a = xmalloc(sizeof(double) * nnz);
	nnz = 0;
	for (int j = 0; j < g->nrows; j++) {
		g->rowstr[j] = nnz;
		for (int k = 0; k < len[j]; k++) {
			int c = cols[cap[j] + k];
			if (c >= g->firstcol && c < g->firstcol + g->ncols) {
				g->colidx[nnz] = c - g->firstcol;
				g->a[nnz] = vals[cap[j] + k];
				nnz++;
			}
		}
	}
	g->rowstr[g->nrows] = nnz;
	free(arow);
	free(acol);
	free(aelt);
	free(cap);
	free(cols);
	free(vals);
	free(len);
}

/* ---- distributed linear algebra ---- */

static double dot(const struct cg *g, const double *u, const double *v)
{
	double s = 0, t;
	for (int i = 0; i < g->ncols; i++)
		s += u[i] * v[i];
	MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, g->row_comm);
	return t;
}

/* q = A p, both vectors distributed by column block. */
static void matvec(struct cg *g, const double *p, double *q)
{
	for (int j = 0; j < g->nrows; j++) {
		double s = 0;
		for (int k = g->rowstr[j]; k < g->rowstr[j + 1]; k++)
			s += g->a[k] * p[g->colidx[k]];
		g->w[j] = s;
	}
	if (g->npcols > 1)
		MPI_Allreduce(g->w, g->wsum, g->nrows, MPI_DOUBLE, MPI_SUM, g->row_comm);
	else
		memcpy(g->wsum, g->w, sizeof(double) * g->nrows);
	int me;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (g->partner == me)
		memcpy(q, g->wsum + g->send_off, sizeof(double) * g->ncols);
	else
		MPI_Sendrecv(g->wsum + g->send_off, g->send_len, MPI_DOUBLE, g->partner, 1, q,
		             g->ncols, MPI_DOUBLE, g->partner, 1, MPI_COMM_WORLD,
		             MPI_STATUS_IGNORE);
}

struct cg_vecs {
	double *x, *z, *p, *q, *r;
};

static double conj_grad(struct cg *g, struct cg_vecs *v)
{
	int n = g->ncols;
	for (int i = 0; i < n; i++) {
		v->q[i] = 0;
		v->z[i] = 0;
		v->r[i] = v->x[i];
		v->p[i] = v->r[i];
	}
	double rho = dot(g, v->r, v->r);
	for (int it = 0; it < CG_ITERS; it++) {
		matvec(g, v->p, v->q);
		double alpha = rho / dot(g, v->p, v->q);
		double rho0 = rho;
		for (int i = 0; i < n; i++) {
			v->z[i] += alpha * v->p[i];
			v->r[i] -= alpha * v->q[i];
		}
		rho = dot(g, v->r, v->r);
		double beta = rho / rho0;
		for (int i = 0; i < n; i++)
			v->p[i] = v->r[i] + beta * v->p[i];
	}
	matvec(g, v->z, v->r);
	for (int i = 0; i < n; i++)
		v->q[i] = v->x[i] - v->r[i];
	return sqrt(dot(g, v->q, v->q));
}

/* One outer step: solve, then zeta and the normalised new x. */
static double power_step(struct cg *g, struct cg_vecs *v, double shift, double *rnorm)
{
	*rnorm = conj_grad(g, v);
	double s[2] = {0, 0}, t[2];
	for (int i = 0; i < g->ncols; i++) {
		s[0] += v->x[i] * v->z[i];
		s[1] += v->z[i] * v->z[i];
	}
	MPI_Allreduce(s, t, 2, MPI_DOUBLE, MPI_SUM, g->row_comm);
	double scale = 1.0 / sqrt(t[1]);
	for (int i = 0; i < g->ncols; i++)
		v->x[i] = scale * v->z[i];
	return shift + 1.0 / t[0];
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, nprocs;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

	struct npb_args args;
	npb_parse_args("cg", argc, argv, &args);
	npb_require_pow2("cg", nprocs, 64);
	const struct cg_class *c = NULL;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (classes[i].cls == args.cls)
			c = &classes[i];
	if (!c)
		npb_die("cg: no class %c", args.cls);

	struct cg g = {.na = c->na};
	int l = 0;
	while ((1 << l) < nprocs)
		l++;
	g.nprows = 1 << (l / 2);
	g.npcols = 1 << (l - l / 2);
	g.pr = rank / g.npcols;
	g.pc = rank % g.npcols;
	int ratio = g.npcols / g.nprows;
	g.firstcol = col_bound(&g, g.pc);
	g.ncols = col_bound(&g, g.pc + 1) - g.firstcol;
	g.firstrow = col_bound(&g, g.pr * ratio);
	g.nrows = col_bound(&g, (g.pr + 1) * ratio) - g.firstrow;
	int pbr = g.pc / ratio, pbc = ratio * g.pr + g.pc % ratio;
	g.partner = pbr * g.npcols + pbc;
	g.send_off = col_bound(&g, pbc) - g.firstrow;
	g.send_len = col_bound(&g, pbc + 1) - col_bound(&g, pbc);
	MPI_Comm_split(MPI_COMM_WORLD, g.pr, g.pc, &g.row_comm);

	if (rank == 0)
		printf("\n NAS Parallel Benchmarks (gamma project implementation) - CG Benchmark\n"
		       " Size: %d  Iterations: %d  Processes: %d (%d x %d grid)\n",
		       c->na, c->niter, nprocs, g.nprows, g.npcols);

	double tran = CG_SEED;
	randlc(&tran, NPB_A);
	double t_init = MPI_Wtime();
	make_matrix(&g, c->nonzer, c->shift, &tran);
	t_init = MPI_Wtime() - t_init;

	g.w = xmalloc(sizeof(double) * g.nrows);
	g.wsum = xmalloc(sizeof(double) * g.nrows);
	struct cg_vecs v;
	double **vs[] = {&v.x, &v.z, &v.p, &v.q, &v.r};
	for (int i = 0; i < 5; i++)
		*vs[i] = xmalloc(sizeof(double) * g.ncols);

	/* One untimed step touches all code and data, as NPB does. */
	double rnorm, zeta = 0;
	for (int i = 0; i < g.ncols; i++)
		v.x[i] = 1.0;
	power_step(&g, &v, c->shift, &rnorm);
	for (int i = 0; i < g.ncols; i++)
		v.x[i] = 1.0;

	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int it = 1; it <= c->niter; it++) {
		zeta = power_step(&g, &v, c->shift, &rnorm);
		if (rank == 0)
			printf("    %5d       %20.14e%20.13e\n", it, rnorm, zeta);
	}
	double tl = MPI_Wtime() - t0, t;
	MPI_Allreduce(&tl, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

	double ref = args.have_override ? args.override_value : c->zeta;
	bool ok = npb_close("zeta", zeta, ref, CG_EPS);
	if (rank == 0) {
		printf(" Initialization time = %.3f seconds\n", t_init);
		double nz1 = (double)c->nonzer * (c->nonzer + 1);
		double mflops =
		    2.0 * c->niter * c->na * (3.0 + nz1 + 25.0 * (5.0 + nz1) + 3.0) / t / 1.0e6;
		struct npb_report r = {
		    .name = "CG",
		    .cls = c->cls,
		    .size = {c->na, 0, 0},
		    .iterations = c->niter,
		    .seconds = t,
		    .mops = mflops,
		    .optype = "floating point",
		    .verified = ok,
		    .nprocs = nprocs,
		};
		npb_print_report(&r);
	}
	MPI_Comm_free(&g.row_comm);
	MPI_Finalize();
	return ok ? 0 : 1;
}
