/* NPB MG: V-cycle multigrid for the 3D Poisson problem with periodic
 * boundaries, on a hierarchy of grids 2^k per side (k = 1..lt). The grid is
 * split in blocks over a 3D process grid; every operator ends with a halo
 * exchange (comm3) with the face neighbours in each of the three axes. */
#include "npb_common.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MG_SEED 314159265.0
#define MG_EPS  1.0e-8
#define NPEAKS  10 /* +1 and -1 charges placed in the right-hand side */

struct mg_class {
	char cls;
	int lt, nit; /* grid side 2^lt */
	double rnm2;
};

static const struct mg_class classes[] = {
    {'S', 5, 4, 0.5307707005734e-04},
    {'W', 7, 4, 0.6467329375339e-05},
    {'A', 8, 4, 0.2433365309069e-05},
};

/* The residual operator A and the smoother S, by stencil distance
 * (centre, face, edge, corner); NPB's values for classes S, W and A. */
static const double op_a[4] = {-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0};
static const double op_c[4] = {-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0};

/* A grid level held by this rank: m[d] interior points per axis plus one ghost
 * layer on each side; axis 0 is the fastest-varying one. */
struct level {
	int m[3], n[3]; /* interior size, size with ghosts */
	long off[3];    /* global index of my first interior point */
	long gsize;     /* global points per side */
};

struct mg {
	int lt;
	int p[3], coord[3];
	int left[3], right[3]; /* world ranks of the neighbours on each axis */
	struct level lev[32];
	double *buf_out, *buf_in;
};

#define AT(l, i3, i2, i1) (((long)(i3) * (l)->n[1] + (i2)) * (l)->n[0] + (i1))

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		npb_die("mg: out of memory (%zu bytes)", n);
	return p;
}

static long level_points(const struct level *l)
{
	return (long)l->n[0] * l->n[1] * l->n[2];
}

static void zero3(const struct level *l, double *u)
{
	memset(u, 0, sizeof(double) * level_points(l));
}

/* ---- halo exchange ---- */

/* Copies the plane idx of axis d (full extent of the other two axes) to or from buf. */
static long plane_io(const struct level *l, double *u, int d, int idx, double *buf, bool pack)
{
	long cnt = 0;
	int lo3 = d == 2 ? idx : 0, hi3 = d == 2 ? idx + 1 : l->n[2];
	int lo2 = d == 1 ? idx : 0, hi2 = d == 1 ? idx + 1 : l->n[1];
	int lo1 = d == 0 ? idx : 0, hi1 = d == 0 ? idx + 1 : l->n[0];
	for (int i3 = lo3; i3 < hi3; i3++)
		for (int i2 = lo2; i2 < hi2; i2++)
			for (int i1 = lo1; i1 < hi1; i1++, cnt++) {
				long at = AT(l, i3, i2, i1);
				if (pack)
					buf[cnt] = u[at];
				else
					u[at] = buf[cnt];
			}
	return cnt;
}

/* Periodic ghost exchange, one axis after another so edges and corners
 * arrive through the ghosts filled by the earlier axes. */
static void comm3(struct mg *g, const struct level *l, double *u)
{
	for (int d = 0; d < 3; d++) {
		int m = l->m[d];
		if (g->p[d] == 1) {
			plane_io(l, u, d, m, g->buf_out, true);
			plane_io(l, u, d, 0, g->buf_out, false);
			plane_io(l, u, d, 1, g->buf_out, true);
			plane_io(l, u, d, m + 1, g->buf_out, false);
			continue;
		}
		/* Low interior plane goes left and lands in the left rank's high ghost. */
		long cnt = plane_io(l, u, d, 1, g->buf_out, true);
		MPI_Sendrecv(g->buf_out, (int)cnt, MPI_DOUBLE, g->left[d], 10 + d, g->buf_in,
		             (int)cnt, MPI_DOUBLE, g->right[d], 10 + d, MPI_COMM_WORLD,
		             MPI_STATUS_IGNORE);
		plane_io(l, u, d, m + 1, g->buf_in, false);
		cnt = plane_io(l, u, d, m, g->buf_out, true);
		MPI_Sendrecv(g->buf_out, (int)cnt, MPI_DOUBLE, g->right[d], 20 + d, g->buf_in,
		             (int)cnt, MPI_DOUBLE, g->left[d], 20 + d, MPI_COMM_WORLD,
		             MPI_STATUS_IGNORE);
		plane_io(l, u, d, 0, g->buf_in, false);
	}
}

/* ---- operators ---- */

/* r = v - A u (r may be v). */
static void resid(struct mg *g, const struct level *l, const double *u, const double *v, double *r)
{
	int n1 = l->n[0];
	double u1[n1], u2[n1];
	for (int i3 = 1; i3 < l->n[2] - 1; i3++)
		for (int i2 = 1; i2 < l->n[1] - 1; i2++) {
			const double *um = u + AT(l, i3, i2 - 1, 0), *up = u + AT(l, i3, i2 + 1, 0);
			const double *ub = u + AT(l, i3 - 1, i2, 0), *ut = u + AT(l, i3 + 1, i2, 0);
			const double *ubm = u + AT(l, i3 - 1, i2 - 1, 0);
			const double *ubp = u + AT(l, i3 - 1, i2 + 1, 0);
			const double *utm = u + AT(l, i3 + 1, i2 - 1, 0);
			const double *utp = u + AT(l, i3 + 1, i2 + 1, 0);
			const double *uc = u + AT(l, i3, i2, 0);
			const double *vc = v + AT(l, i3, i2, 0);
			double *rc = r + AT(l, i3, i2, 0);
			for (int i1 = 0; i1 < n1; i1++) {
				u1[i1] = um[i1] + up[i1] + ub[i1] + ut[i1];
				u2[i1] = ubm[i1] + ubp[i1] + utm[i1] + utp[i1];
			}
			for (int i1 = 1; i1 < n1 - 1; i1++)
				rc[i1] = vc[i1] - op_a[0] * uc[i1] -
				         op_a[2] * (u2[i1] + u1[i1 - 1] + u1[i1 + 1]) -
				         op_a[3] * (u2[i1 - 1] + u2[i1 + 1]);
		}
	comm3(g, l, r);
}

/* u = u + S r: the smoother. */
static void psinv(struct mg *g, const struct level *l, const double *r, double *u)
{
	int n1 = l->n[0];
	double r1[n1], r2[n1];
	for (int i3 = 1; i3 < l->n[2] - 1; i3++)
		for (int i2 = 1; i2 < l->n[1] - 1; i2++) {
			const double *rm = r + AT(l, i3, i2 - 1, 0), *rp = r + AT(l, i3, i2 + 1, 0);
			const double *rb = r + AT(l, i3 - 1, i2, 0), *rt = r + AT(l, i3 + 1, i2, 0);
			const double *rbm = r + AT(l, i3 - 1, i2 - 1, 0);
			const double *rbp = r + AT(l, i3 - 1, i2 + 1, 0);
			const double *rtm = r + AT(l, i3 + 1, i2 - 1, 0);
			const double *rtp = r + AT(l, i3 + 1, i2 + 1, 0);
			const double *rc = r + AT(l, i3, i2, 0);
			double *uc = u + AT(l, i3, i2, 0);
			for (int i1 = 0; i1 < n1; i1++) {
				r1[i1] = rm[i1] + rp[i1] + rb[i1] + rt[i1];
				r2[i1] = rbm[i1] + rbp[i1] + rtm[i1] + rtp[i1];
			}
			for (int i1 = 1; i1 < n1 - 1; i1++)
				uc[i1] = uc[i1] + op_c[0] * rc[i1] +
				         op_c[1] * (rc[i1 - 1] + rc[i1 + 1] + r1[i1]) +
				         op_c[2] * (r2[i1] + r1[i1 - 1] + r1[i1 + 1]);
		}
	comm3(g, l, u);
}

/* s (coarse level lc) = full-weighting restriction of r (fine level lf).
 * Coarse interior point j sits on fine interior point 2j+1. */
static void rprj3(struct mg *g, const struct level *lf, const double *r, const struct level *lc,
                  double *s)
{
	double x1[lf->n[0]], y1[lf->n[0]];
	for (int j3 = 1; j3 < lc->n[2] - 1; j3++) {
		int i3 = 2 * j3 - 1;
		for (int j2 = 1; j2 < lc->n[1] - 1; j2++) {
			int i2 = 2 * j2 - 1;
#define R(a, b, c) r[AT(lf, i3 + (a), i2 + (b), (c))]
			for (int j1 = 1; j1 < lc->n[0]; j1++) {
				int i1 = 2 * j1 - 1;
				x1[i1] = R(1, 0, i1) + R(1, 2, i1) + R(0, 1, i1) + R(2, 1, i1);
				y1[i1] = R(0, 0, i1) + R(2, 0, i1) + R(0, 2, i1) + R(2, 2, i1);
			}
			for (int j1 = 1; j1 < lc->n[0] - 1; j1++) {
				int i1 = 2 * j1 - 1;
				double y2 = R(0, 0, i1 + 1) + R(2, 0, i1 + 1) + R(0, 2, i1 + 1) +
				            R(2, 2, i1 + 1);
				double x2 = R(1, 0, i1 + 1) + R(1, 2, i1 + 1) + R(0, 1, i1 + 1) +
				            R(2, 1, i1 + 1);
				s[AT(lc, j3, j2, j1)] =
				    0.5 * R(1, 1, i1 + 1) +
				    0.25 * (R(1, 1, i1) + R(1, 1, i1 + 2) + x2) +
				    0.125 * (x1[i1] + x1[i1 + 2] + y2) +
				    0.0625 * (y1[i1] + y1[i1 + 2]);
			}
#undef R
		}
	}
	comm3(g, lc, s);
}

/* u (fine level lf) += trilinear interpolation of z (coarse level lc). */
static void interp(struct mg *g, const struct level *lc, const double *z, const struct level *lf,
                   double *u)
{
	int mm1 = lc->n[0];
	double z1[mm1], z2[mm1], z3[mm1];
	for (int i3 = 0; i3 < lc->n[2] - 1; i3++)
		for (int i2 = 0; i2 < lc->n[1] - 1; i2++) {
			const double *z00 = z + AT(lc, i3, i2, 0), *z01 = z + AT(lc, i3, i2 + 1, 0);
			const double *z10 = z + AT(lc, i3 + 1, i2, 0);
			const double *z11 = z + AT(lc, i3 + 1, i2 + 1, 0);
			for (int i1 = 0; i1 < mm1; i1++) {
				z1[i1] = z01[i1] + z00[i1];
				z2[i1] = z10[i1] + z00[i1];
				z3[i1] = z11[i1] + z10[i1] + z1[i1];
			}
			double *u00 = u + AT(lf, 2 * i3, 2 * i2, 0);
			double *u01 = u + AT(lf, 2 * i3, 2 * i2 + 1, 0);
			double *u10 = u + AT(lf, 2 * i3 + 1, 2 * i2, 0);
			double *u11 = u + AT(lf, 2 * i3 + 1, 2 * i2 + 1, 0);
			for (int i1 = 0; i1 < mm1 - 1; i1++) {
				u00[2 * i1] += z00[i1];
				u00[2 * i1 + 1] += 0.5 * (z00[i1 + 1] + z00[i1]);
				u01[2 * i1] += 0.5 * z1[i1];
				u01[2 * i1 + 1] += 0.25 * (z1[i1] + z1[i1 + 1]);
				u10[2 * i1] += 0.5 * z2[i1];
				u10[2 * i1 + 1] += 0.25 * (z2[i1] + z2[i1 + 1]);
				u11[2 * i1] += 0.25 * z3[i1];
				u11[2 * i1 + 1] += 0.125 * (z3[i1] + z3[i1 + 1]);
			}
		}
	comm3(g, lf, u);
}

/* L2 norm (root mean square) and max norm of the interior of r. */
static void norm2u3(const struct level *l, const double *r, double *rnm2, double *rnmu)
{
	double s = 0, mx = 0;
	for (int i3 = 1; i3 < l->n[2] - 1; i3++)
		for (int i2 = 1; i2 < l->n[1] - 1; i2++) {
			const double *rc = r + AT(l, i3, i2, 0);
			for (int i1 = 1; i1 < l->n[0] - 1; i1++) {
				s += rc[i1] * rc[i1];
				mx = fmax(mx, fabs(rc[i1]));
			}
		}
	double gs, gm;
	MPI_Allreduce(&s, &gs, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&mx, &gm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	*rnm2 = sqrt(gs / ((double)l->gsize * l->gsize * l->gsize));
	*rnmu = gm;
}

/* ---- right-hand side ---- */

struct peak {
	double val;
	double where; /* global linear index, as a double for one MPI type */
};

/* Keeps the NPEAKS best candidates in list, best first. */
static void offer(struct peak *list, int *len, struct peak c, bool largest)
{
	int n = *len;
	if (n == NPEAKS) {
		double worst = list[n - 1].val;
		if (largest ? !(c.val > worst) : !(c.val < worst))
			return;
		n--;
	}
	int k = n;
	while (k > 0 && (largest ? c.val > list[k - 1].val : c.val < list[k - 1].val)) {
		list[k] = list[k - 1];
		k--;
	}
	list[k] = c;
	*len = n + 1;
}

/* v = 0 except +1 at the NPEAKS largest and -1 at the NPEAKS smallest of a
 * field of NPB random numbers laid out in global lexicographic order. */
static void zran3(struct mg *g, const struct level *l, double *v, int nprocs)
{
	long nx = l->gsize;
	zero3(l, v);
	struct peak hi[NPEAKS], lo[NPEAKS];
	int nhi = 0, nlo = 0;
	for (int i3 = 1; i3 <= l->m[2]; i3++)
		for (int i2 = 1; i2 <= l->m[1]; i2++) {
			long g2 = l->off[1] + i2 - 1, g3 = l->off[2] + i3 - 1;
			long first = l->off[0] + nx * (g2 + nx * g3);
			double x = MG_SEED;
			randlc(&x, npb_pow46(NPB_A, (uint64_t)first));
			double *row = v + AT(l, i3, i2, 1);
			vranlc(l->m[0], &x, NPB_A, row);
			for (int i1 = 0; i1 < l->m[0]; i1++) {
				struct peak c = {row[i1], (double)(first + i1)};
				offer(hi, &nhi, c, true);
				offer(lo, &nlo, c, false);
			}
		}
	if (nhi < NPEAKS || nlo < NPEAKS)
		npb_die("mg: local grid too small for the right-hand side");
	struct peak *all = xmalloc(sizeof(struct peak) * 2 * NPEAKS * nprocs);
	struct peak mine[2 * NPEAKS];
	memcpy(mine, hi, sizeof(hi));
	memcpy(mine + NPEAKS, lo, sizeof(lo));
	MPI_Allgather(mine, 4 * NPEAKS, MPI_DOUBLE, all, 4 * NPEAKS, MPI_DOUBLE, MPI_COMM_WORLD);
	zero3(l, v);

	/* Global winners, in rank order so every rank decides alike. */
	struct peak ghi[NPEAKS], glo[NPEAKS];
	int nghi = 0, nglo = 0;
	for (int p = 0; p < nprocs; p++)
		for (int k = 0; k < NPEAKS; k++) {
			offer(ghi, &nghi, all[p * 2 * NPEAKS + k], true);
			offer(glo, &nglo, all[p * 2 * NPEAKS + NPEAKS + k], false);
		}
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < NPEAKS; k++) {
			long w = (long)(s == 0 ? glo[k].where : ghi[k].where);
			long g1 = w % nx, g2 = (w / nx) % nx, g3 = w / (nx * nx);
			long i1 = g1 - l->off[0], i2 = g2 - l->off[1], i3 = g3 - l->off[2];
			if (i1 >= 0 && i1 < l->m[0] && i2 >= 0 && i2 < l->m[1] && i3 >= 0 &&
			    i3 < l->m[2])
				v[AT(l, i3 + 1, i2 + 1, i1 + 1)] = s == 0 ? -1.0 : 1.0;
		}
	free(all);
	comm3(g, l, v);
}

/* ---- V cycle ---- */

static void mg3p(struct mg *g, double **u, double *v, double **r)
{
	int lt = g->lt;
	for (int k = lt; k > 1; k--)
		rprj3(g, &g->lev[k], r[k], &g->lev[k - 1], r[k - 1]);
	zero3(&g->lev[1], u[1]);
	psinv(g, &g->lev[1], r[1], u[1]);
	for (int k = 2; k < lt; k++) {
		zero3(&g->lev[k], u[k]);
		interp(g, &g->lev[k - 1], u[k - 1], &g->lev[k], u[k]);
		resid(g, &g->lev[k], u[k], r[k], r[k]);
		psinv(g, &g->lev[k], r[k], u[k]);
	}
	interp(g, &g->lev[lt - 1], u[lt - 1], &g->lev[lt], u[lt]);
	resid(g, &g->lev[lt], u[lt], v, r[lt]);
	psinv(g, &g->lev[lt], r[lt], u[lt]);
}

static void setup(struct mg *g, int rank, int nprocs)
{
	/* Split axes from the slowest: 2 ranks -> 1x1x2, 4 -> 1x2x2, 8 -> 2x2x2. */
	g->p[0] = g->p[1] = g->p[2] = 1;
	for (int n = nprocs, d = 2; n > 1; n /= 2, d = (d + 2) % 3)
		g->p[d] *= 2;
	g->coord[0] = rank % g->p[0];
	g->coord[1] = (rank / g->p[0]) % g->p[1];
	g->coord[2] = rank / (g->p[0] * g->p[1]);
	for (int d = 0; d < 3; d++) {
		int c[3] = {g->coord[0], g->coord[1], g->coord[2]};
		c[d] = (g->coord[d] + g->p[d] - 1) % g->p[d];
		g->left[d] = c[0] + g->p[0] * (c[1] + g->p[1] * c[2]);
		c[d] = (g->coord[d] + 1) % g->p[d];
		g->right[d] = c[0] + g->p[0] * (c[1] + g->p[1] * c[2]);
	}
	long maxplane = 0;
	for (int k = 1; k <= g->lt; k++) {
		struct level *l = &g->lev[k];
		l->gsize = 1L << k;
		for (int d = 0; d < 3; d++) {
			if (l->gsize < g->p[d])
				npb_die("mg: %d ranks along an axis exceed the coarsest grid",
				        g->p[d]);
			l->m[d] = (int)(l->gsize / g->p[d]);
			l->n[d] = l->m[d] + 2;
			l->off[d] = (long)g->coord[d] * l->m[d];
		}
		for (int d = 0; d < 3; d++) {
			long plane = level_points(l) / l->n[d];
			if (plane > maxplane)
				maxplane = plane;
		}
	}
	g->buf_out = xmalloc(sizeof(double) * maxplane);
	g->buf_in = xmalloc(sizeof(double) * maxplane);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, nprocs;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

	struct npb_args args;
	npb_parse_args("mg", argc, argv, &args);
	/* The coarsest grid is 2^3 points: at most two ranks per axis. */
	npb_require_pow2("mg", nprocs, 8);
	const struct mg_class *c = NULL;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (classes[i].cls == args.cls)
			c = &classes[i];
	if (!c)
		npb_die("mg: no class %c", args.cls);

	struct mg g = {.lt = c->lt};
	setup(&g, rank, nprocs);
	int lt = g.lt;
	double *u[32], *r[32];
	for (int k = 1; k <= lt; k++) {
		u[k] = xmalloc(sizeof(double) * level_points(&g.lev[k]));
		r[k] = xmalloc(sizeof(double) * level_points(&g.lev[k]));
		zero3(&g.lev[k], u[k]);
		zero3(&g.lev[k], r[k]);
	}
	struct level *top = &g.lev[lt];
	double *v = xmalloc(sizeof(double) * level_points(top));
	long nx = top->gsize;

	if (rank == 0)
		printf("\n NAS Parallel Benchmarks (gamma project implementation) - MG Benchmark\n"
		       " Size: %ldx%ldx%ld  Iterations: %d  Processes: %d (%dx%dx%d grid)\n",
		       nx, nx, nx, c->nit, nprocs, g.p[0], g.p[1], g.p[2]);

	/* One untimed cycle touches all code and data, as NPB does. */
	double rnm2, rnmu;
	zran3(&g, top, v, nprocs);
	resid(&g, top, u[lt], v, r[lt]);
	norm2u3(top, r[lt], &rnm2, &rnmu);
	mg3p(&g, u, v, r);
	resid(&g, top, u[lt], v, r[lt]);

	zero3(top, u[lt]);
	zran3(&g, top, v, nprocs);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	resid(&g, top, u[lt], v, r[lt]);
	norm2u3(top, r[lt], &rnm2, &rnmu);
	for (int it = 1; it <= c->nit; it++) {
		if (rank == 0)
			printf("  iter %3d\n", it);
		mg3p(&g, u, v, r);
		resid(&g, top, u[lt], v, r[lt]);
	}
	norm2u3(top, r[lt], &rnm2, &rnmu);
	double tl = MPI_Wtime() - t0, t;
	MPI_Allreduce(&tl, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

	double ref = args.have_override ? args.override_value : c->rnm2;
	bool ok = npb_close("L2norm", rnm2, ref, MG_EPS);
	if (rank == 0) {
		struct npb_report rep = {
		    .name = "MG",
		    .cls = c->cls,
		    .size = {nx, nx, nx},
		    .iterations = c->nit,
		    .seconds = t,
		    .mops = 58.0 * c->nit * (double)(nx * nx * nx) / t / 1.0e6,
		    .optype = "floating point",
		    .verified = ok,
		    .nprocs = nprocs,
		};
		npb_print_report(&rep);
	}
	MPI_Finalize();
	return ok ? 0 : 1;
}
