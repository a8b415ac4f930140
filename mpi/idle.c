/* An idle rank sleeps instead of spinning (btl_gamma_idle_block), and still
 * gets its messages.  Two ranks; each round rank 1 waits in MPI_Recv while
 * rank 0 withholds the message until it has seen rank 1's main thread
 * asleep (state S in /proc/PID/stat: a rank that spins through
 * sched_yield stays R), then sends 1 MiB that rank 1 checks byte by byte
 * and answers.  Waits for conditions only: a rank that never sleeps fails
 * after --wait-s seconds of looking (default 60).
 * Prints "ok: N rounds, rank 1 asleep in MPI_Recv each time, every byte checked". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEN    (1 << 20)
#define ROUNDS 3

static unsigned char pattern(int round, size_t i)
{
	return (unsigned char)(i * 131 + (size_t)round * 7 + (i >> 12));
}

/* The state letter of PID's main thread, '?' if unreadable. */
static char proc_state(int pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	return p && p[1] == ' ' ? p[2] : '?';
}

static int wait_asleep(int pid, int wait_s)
{
	char st = '?';

	for (long i = 0; i < wait_s * 100L; i++) {
		st = proc_state(pid);
		if (st == 'S')
			return 0;
		usleep(10000);
	}
	printf("FAIL: rank 1 (pid %d) never slept in MPI_Recv within %d s (state %c)\n", pid,
	       wait_s, st);
	return 1;
}

int main(int argc, char **argv)
{
	int rank, size, wait_s = 60, errors = 0, all;
	unsigned char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc == 3 && !strcmp(argv[1], "--wait-s"))
		wait_s = atoi(argv[2]);
	if (size != 2 || wait_s <= 0) {
		if (!rank)
			fprintf(stderr, "usage: mpirun -np 2 %s [--wait-s S]\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(LEN);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int r = 0; r < ROUNDS; r++) {
		int pid = getpid(), ack = 0;

		if (rank == 1) {
			MPI_Send(&pid, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
			memset(buf, 0, LEN);
			MPI_Recv(buf, LEN, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (size_t i = 0; i < LEN; i++)
				if (buf[i] != pattern(r, i)) {
					printf("FAIL: round %d: byte %zu is %u, not %u\n", r, i,
					       buf[i], pattern(r, i));
					errors++;
					break;
				}
			ack = r + 100;
			MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
		} else {
			MPI_Recv(&pid, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			errors += wait_asleep(pid, wait_s);
			for (size_t i = 0; i < LEN; i++)
				buf[i] = pattern(r, i);
			MPI_Send(buf, LEN, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
			MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (ack != r + 100) {
				printf("FAIL: round %d: answer %d, not %d\n", r, ack, r + 100);
				errors++;
			}
		}
	}
	MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank && !all)
		printf("ok: %d rounds, rank 1 asleep in MPI_Recv each time, every byte checked\n",
		       ROUNDS);
	free(buf);
	MPI_Finalize();
	return all ? 1 : 0;
}
