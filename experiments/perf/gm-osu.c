/*
 * gm-osu: OSU-style point-to-point benchmarks for any MPI (Open MPI with btl
 * gamma or btl tcp, MPICH): half round-trip latency, streaming bandwidth and
 * 8-byte message rate between ranks 0 and 1, with the CPU time both ranks
 * spent (getrusage), so transports compare by cost as well as by speed.
 *
 * Data is verified: before each size is timed, a few messages are checked
 * byte for byte against a pattern; during the timed loops every message
 * carries its sequence number in its first and last 8 bytes and the
 * receiver checks both, so a lost, duplicated, reordered or stale message
 * fails the run without the timed path paying for a full scan.
 *
 * Latency is the median of per-round-trip samples (a loaded machine
 * deschedules busy-polling ranks for whole time slices; the mean mostly
 * measures the scheduler). Bandwidth and message rate are medians over
 * repetitions.
 *
 * Output (rank 0), CSV: test,size,value,unit,cpu,cpu_unit
 * Exit status 0 only if every check passed.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_SIZES  64
#define WIN_BYTES  (64u << 20)
#define MAX_WINDOW 64

static int rank, peer;
static long errors, verified_full, verified_stamps;

static void die(const char *msg)
{
	fprintf(stderr, "gm-osu: %s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* CPU seconds of both ranks since start (collective). */
static double cpu_both(double start)
{
	double mine = cpu_now() - start, sum = 0;

	MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return sum;
}

static uint8_t pat(size_t i, int from)
{
	return (uint8_t)(i * 7 + (i >> 9) * 13 + from * 101 + 1);
}

static void fill(uint8_t *b, size_t n, int from)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, from);
}

/* Sequence number in the first and last 8 bytes (messages of 16 B or more). */
static void stamp(uint8_t *b, size_t n, uint64_t seq)
{
	if (n < 16)
		return;
	uint64_t t = ~seq;
	memcpy(b, &seq, 8);
	memcpy(b + n - 8, &t, 8);
}

static void report(const char *what, size_t n, uint64_t seq, size_t at, int got, int want)
{
	if (errors++ < 8)
		fprintf(stderr,
		        "gm-osu: rank %d: DATA CORRUPTION in %s message #%llu of %zu B: "
		        "byte %zu is 0x%02x, expected 0x%02x\n",
		        rank, what, (unsigned long long)seq, n, at, got, want);
}

/* Full check: pattern of the sender, with its stamp. */
static void check_full(const char *what, const uint8_t *b, size_t n, uint64_t seq, int from)
{
	uint8_t s[16];
	if (n >= 16) {
		uint64_t t = ~seq;
		memcpy(s, &seq, 8);
		memcpy(s + 8, &t, 8);
	}
	for (size_t i = 0; i < n; i++) {
		int want = pat(i, from);
		if (n >= 16 && i < 8)
			want = s[i];
		else if (n >= 16 && i >= n - 8)
			want = s[8 + i - (n - 8)];
		if (b[i] != want) {
			report(what, n, seq, i, b[i], want);
			return;
		}
	}
	verified_full++;
}

static void check_stamp(const char *what, const uint8_t *b, size_t n, uint64_t seq, int from)
{
	if (n < 16) {
		check_full(what, b, n, seq, from);
		return;
	}
	uint64_t h, t;
	memcpy(&h, b, 8);
	memcpy(&t, b + n - 8, 8);
	if (h != seq || t != ~seq) {
		report(what, n, seq, h != seq ? 0 : n - 8, b[h != seq ? 0 : n - 8], 0);
		return;
	}
	verified_stamps++;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_sizes(const char *s, size_t *out)
{
	int n = 0;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *tok = strtok(buf, ","); tok && n < MAX_SIZES; tok = strtok(NULL, ",")) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 10);
		if (*end == 'K' || *end == 'k')
			v <<= 10, end++;
		else if (*end == 'M' || *end == 'm')
			v <<= 20, end++;
		if (end == tok || *end || v > (256u << 20))
			die("bad size list (want e.g. 0,8,1K,64K,1M)");
		out[n++] = v;
	}
	return n;
}

/* One ping-pong exchange; rank 0 pings. */
static void round_trip(const uint8_t *sb, uint8_t *rb, size_t n)
{
	if (rank == 0) {
		MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
		MPI_Recv(rb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(rb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
	}
}

/* Ping-pong latency. */
static void latency(uint8_t *sb, uint8_t *rb, size_t n, int iters, int reps)
{
	int total = iters * reps, warm = iters / 10 + 2;
	double *v = malloc(sizeof(double) * (total > 0 ? total : 1));
	if (!v)
		die("out of memory");
	fill(sb, n, rank);
	/* Verification round trips: every byte. */
	for (int i = 0; i < 3 + warm; i++) {
		uint64_t seq = i;
		stamp(sb, n, seq);
		round_trip(sb, rb, n);
		if (i < 3)
			check_full("latency", rb, n, seq, peer);
		else
			check_stamp("latency", rb, n, seq, peer);
	}
	for (int i = 0; i < total; i++) {
		uint64_t seq = 1000 + (uint64_t)i;
		stamp(sb, n, seq);
		double t0 = MPI_Wtime();
		round_trip(sb, rb, n);
		v[i] = (MPI_Wtime() - t0) / 2 * 1e6;
		check_stamp("latency", rb, n, seq, peer);
	}
	if (rank == 0 && total > 0) {
		double mean = 0;
		for (int i = 0; i < total; i++)
			mean += v[i];
		mean /= total;
		printf("latency,%zu,%.3f,us,%.3f,us_mean\n", n, median(v, total), mean);
		fflush(stdout);
	}
	free(v);
}

/*
 * Both ranks send n bytes to each other at once (MPI_Sendrecv, as halo
 * exchanges do), iters times, timed from the very first: run first, it
 * shows what a fresh process pays (rings and buffers touched for the first
 * time) beside the steady state.  Prints the median of all exchanges and
 * of the first tenth.
 */
static void exchange(uint8_t *sb, uint8_t *rb, size_t n, int iters)
{
	int tenth = iters / 10 > 0 ? iters / 10 : 1;
	double *v = malloc(sizeof(double) * (size_t)iters);
	if (!v)
		die("out of memory");
	fill(sb, n, rank);
	for (int i = 0; i < iters + 3; i++) {
		uint64_t seq = 2000000 + (uint64_t)i;
		stamp(sb, n, seq);
		double t0 = MPI_Wtime();
		MPI_Sendrecv(sb, (int)n, MPI_BYTE, peer, 3, rb, (int)n, MPI_BYTE, peer, 3,
		             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (i < iters) {
			v[i] = (MPI_Wtime() - t0) * 1e6;
			check_stamp("exchange", rb, n, seq, peer);
		} else {
			check_full("exchange", rb, n, seq, peer);
		}
	}
	if (rank == 0) {
		double first = median(v, (size_t)tenth); /* sorts only the first tenth */
		printf("exchange,%zu,%.3f,us,%.3f,us_first_tenth\n", n, median(v, (size_t)iters),
		       first);
		fflush(stdout);
	}
	free(v);
}

/*
 * Rank 0 streams windows of W messages, rank 1 answers each window with an
 * empty ack. Returns messages per second of the timed windows, median over
 * reps; *cpu gets both ranks' CPU seconds per message.
 */
static double stream(uint8_t *sb, uint8_t *rb, size_t n, int window, int windows, int reps,
                     double *cpu)
{
	MPI_Request rq[MAX_WINDOW];
	MPI_Status st[MAX_WINDOW];
	double v[64], cpu_total = 0;
	uint64_t seq = 0;
	long timed = 0;
	char ack = 0;

	if (reps > 64)
		reps = 64;
	fill(sb, n * window, rank);
	for (int r = -1; r < reps; r++) { /* r = -1: verified, untimed warm-up */
		MPI_Barrier(MPI_COMM_WORLD);
		double c0 = cpu_now(), t0 = MPI_Wtime();
		int nwin = r < 0 ? 2 : windows;
		for (int w = 0; w < nwin; w++) {
			uint64_t base = seq;
			for (int j = 0; j < window; j++) {
				uint8_t *slot = (rank == 0 ? sb : rb) + (size_t)j * n;
				if (rank == 0) {
					stamp(slot, n, base + j);
					MPI_Isend(slot, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
					          &rq[j]);
				} else {
					MPI_Irecv(slot, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
					          &rq[j]);
				}
			}
			MPI_Waitall(window, rq, st);
			if (rank == 0) {
				MPI_Recv(&ack, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
				         MPI_STATUS_IGNORE);
			} else {
				for (int j = 0; j < window; j++) {
					uint8_t *slot = rb + (size_t)j * n;
					if (r < 0) {
						/* the sender's slot j holds pattern bytes j*n.. */
						uint8_t *want = malloc(n ? n : 1);
						if (!want)
							die("out of memory");
						for (size_t i = 0; i < n; i++)
							want[i] = pat((size_t)j * n + i, peer);
						stamp(want, n, base + j);
						if (memcmp(want, slot, n))
							for (size_t i = 0; i < n; i++)
								if (want[i] != slot[i]) {
									report("stream", n,
									       base + j, i, slot[i],
									       want[i]);
									break;
								}
						verified_full++;
						free(want);
					} else if (n >= 16) {
						check_stamp("stream", slot, n, base + j, peer);
					} else {
						verified_stamps++; /* too small to stamp */
					}
				}
				MPI_Send(&ack, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
			}
			seq += window;
		}
		double t = MPI_Wtime() - t0, c = cpu_both(c0);
		if (r >= 0) {
			double rate = (double)windows * window / t;
			MPI_Bcast(&rate, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
			v[r] = rate;
			cpu_total += c;
			timed += (long)windows * window;
		}
	}
	*cpu = cpu_total / timed;
	return median(v, reps);
}

/* Messages in flight: 64, fewer for large messages (at most 64 MiB). */
static int window_for(size_t n)
{
	size_t w = n ? WIN_BYTES / n : MAX_WINDOW;
	return w > MAX_WINDOW ? MAX_WINDOW : w < 1 ? 1 : (int)w;
}

int main(int argc, char **argv)
{
	size_t lat[MAX_SIZES], bw[MAX_SIZES], ex[MAX_SIZES];
	int nlat = 0, nbw = 0, nex = 0, rate = 0, iters = 1000, reps = 5;
	double target = 64e6;
	int size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2)
		die("run with exactly 2 ranks");
	peer = 1 - rank;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--rate")) {
			rate = 1;
			continue;
		}
		if (!v)
			die("usage: gm-osu [--exchange SIZES] [--lat SIZES] [--bw SIZES] [--rate] "
			    "[--iters N] [--reps R] [--bytes B]");
		i++;
		if (!strcmp(a, "--lat"))
			nlat = parse_sizes(v, lat);
		else if (!strcmp(a, "--exchange"))
			nex = parse_sizes(v, ex);
		else if (!strcmp(a, "--bw"))
			nbw = parse_sizes(v, bw);
		else if (!strcmp(a, "--iters"))
			iters = atoi(v);
		else if (!strcmp(a, "--reps"))
			reps = atoi(v);
		else if (!strcmp(a, "--bytes"))
			target = atof(v);
		else
			die("unknown option");
	}
	if (iters < 1 || reps < 1 || reps > 64 || !(target > 0))
		die("bad --iters, --reps or --bytes");

	size_t maxbuf = 1 << 16;
	for (int i = 0; i < nlat; i++)
		if (lat[i] > maxbuf)
			maxbuf = lat[i];
	for (int i = 0; i < nex; i++)
		if (ex[i] > maxbuf)
			maxbuf = ex[i];
	for (int i = 0; i < nbw; i++)
		if (bw[i] * (size_t)window_for(bw[i]) > maxbuf)
			maxbuf = bw[i] * (size_t)window_for(bw[i]);
	if (rate && 8 * MAX_WINDOW > maxbuf)
		maxbuf = 8 * MAX_WINDOW;
	uint8_t *sb = malloc(maxbuf), *rb = malloc(maxbuf);
	if (!sb || !rb)
		die("out of memory");
	memset(rb, 0, maxbuf);
	if (rank == 0)
		printf("test,size,value,unit,cpu,cpu_unit\n");
	for (int i = 0; i < nex; i++)
		exchange(sb, rb, ex[i], iters);
	for (int i = 0; i < nlat; i++)
		latency(sb, rb, lat[i], iters, reps);
	for (int i = 0; i < nbw; i++) {
		size_t n = bw[i];
		int window = window_for(n);
		int windows = (int)(target / ((double)n * window)) + 1;
		double cpu, r = stream(sb, rb, n, window, windows, reps, &cpu);
		if (rank == 0)
			printf("bandwidth,%zu,%.3f,MB/s,%.4f,cpu_s_per_GB\n", n, r * n / 1e6,
			       cpu / n * 1e9);
		fflush(stdout);
	}
	if (rate) {
		int windows = (int)(target / 1e4) + 1; /* ~target/160 messages */
		double cpu, r = stream(sb, rb, 8, MAX_WINDOW, windows, reps, &cpu);
		if (rank == 0)
			printf("msgrate,8,%.1f,msg/s,%.4f,cpu_s_per_Mmsg\n", r, cpu * 1e6);
		fflush(stdout);
	}
	long e = errors, all = 0, vf = 0, vs = 0;
	MPI_Reduce(&e, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&verified_full, &vf, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&verified_stamps, &vs, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (all)
			printf("# gm-osu: FAILED: %ld corrupted messages\n", all);
		else
			printf("# gm-osu: OK: verified %ld messages byte for byte and %ld by "
			       "sequence stamps\n",
			       vf, vs);
	}
	MPI_Bcast(&all, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	free(sb);
	free(rb);
	MPI_Finalize();
	return all ? 1 : 0;
}
