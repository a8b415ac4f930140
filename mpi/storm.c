/* Message storms: thousands of small non-blocking sends from every rank to every
 * rank at once, all verified, with MPI's non-overtaking rule checked: messages
 * from one source with one tag must match receives in the order they were sent.
 *
 * Each message carries (source, tag, sequence number per (source, tag)) and a
 * size-dependent pattern. Three phases:
 *   preposted   - receives (ANY_SOURCE, ANY_TAG) posted before the sends
 *   unexpected  - sends first, a barrier, then the receives (unexpected queue)
 *   directed    - receives name the source and tag, posted in shuffled peer order
 * Options: --msgs N  messages per (sender, receiver) pair (default 2000, --quick 300)
 */
#include "suite.h"

#define NTAGS  4
#define MAXLEN 96

struct hdr {
	int32_t src, tag, seq, len;
};

static int msg_len(int src, int dst, int k)
{
	return (int)sizeof(struct hdr) +
	       (src * 7 + dst * 3 + k) % (MAXLEN - (int)sizeof(struct hdr));
}

static int msg_tag(int k)
{
	return (k * 5 + k / 3) % NTAGS;
}

static void fill_msg(uint8_t *b, int src, int dst, int k, int seq, int phase)
{
	struct hdr h = {src, msg_tag(k), seq, msg_len(src, dst, k)};
	memcpy(b, &h, sizeof(h));
	suite_fill(b + sizeof(h), h.len - sizeof(h), suite_seed(src, dst, phase * 1000003 + k));
}

/* Sends m messages to every rank (self included). seq counts per (dst, tag). */
static void post_sends(int m, int phase, uint8_t *sbuf, MPI_Request *rq)
{
	int n = 0;
	int *seq = suite_alloc(S.size * NTAGS * sizeof(int));
	memset(seq, 0, S.size * NTAGS * sizeof(int));
	/* interleave destinations so every peer sees traffic all the time */
	for (int k = 0; k < m; k++)
		for (int d = 0; d < S.size; d++) {
			int dst = (S.rank + d) % S.size;
			uint8_t *b = sbuf + (size_t)n * MAXLEN;
			fill_msg(b, S.rank, dst, k, seq[dst * NTAGS + msg_tag(k)]++, phase);
			MPI_Isend(b, msg_len(S.rank, dst, k), MPI_BYTE, dst, msg_tag(k),
			          MPI_COMM_WORLD, &rq[n++]);
		}
	free(seq);
}

/* Verifies one received message against its status and the per-(src,tag) order.
 * k (the sender's loop index) is recovered from the sequence: the sender's k-th
 * message to us with tag t is the seq-th with that tag. */
static void verify(const uint8_t *b, const MPI_Status *st, int *next_seq, int **k_of, int phase)
{
	struct hdr h;
	int count = -1;
	MPI_Get_count(st, MPI_BYTE, &count);
	if (count < (int)sizeof(h)) {
		suite_error("storm: message of %d bytes from %d, too short", count, st->MPI_SOURCE);
		return;
	}
	memcpy(&h, b, sizeof(h));
	if (h.src != st->MPI_SOURCE || h.tag != st->MPI_TAG || h.len != count || h.src < 0 ||
	    h.src >= S.size || h.tag < 0 || h.tag >= NTAGS) {
		suite_error("storm: header src %d tag %d len %d, status src %d tag %d count %d",
		            h.src, h.tag, h.len, st->MPI_SOURCE, st->MPI_TAG, count);
		return;
	}
	int *ns = &next_seq[h.src * NTAGS + h.tag];
	if (h.seq != *ns) {
		suite_error("storm: from %d tag %d got seq %d, expected %d (order broken)", h.src,
		            h.tag, h.seq, *ns);
		*ns = h.seq + 1;
		return;
	}
	(*ns)++;
	int k = k_of[h.tag][h.seq];
	if (k < 0 || msg_len(h.src, S.rank, k) != count) {
		suite_error("storm: from %d tag %d seq %d: unexpected length %d", h.src, h.tag,
		            h.seq, count);
		return;
	}
	size_t d = suite_first_diff(b + sizeof(h), count - sizeof(h),
	                            suite_seed(h.src, S.rank, phase * 1000003 + k));
	if (d != (size_t)-1)
		suite_error("storm: from %d tag %d seq %d: payload byte %zu wrong", h.src, h.tag,
		            h.seq, d);
}

static void storm(int m, int phase)
{
	int P = S.size, total = m * P;
	uint8_t *sbuf = suite_alloc((size_t)total * MAXLEN);
	uint8_t *rbuf = suite_alloc((size_t)total * MAXLEN);
	MPI_Request *srq = suite_alloc(total * sizeof(MPI_Request));
	MPI_Request *rrq = suite_alloc(total * sizeof(MPI_Request));
	MPI_Status *st = suite_alloc(total * sizeof(MPI_Status));
	int *next_seq = suite_alloc(P * NTAGS * sizeof(int));
	memset(next_seq, 0, P * NTAGS * sizeof(int));
	/* k_of[tag][seq]: which loop index produced the seq-th message with that tag */
	int *k_of[NTAGS], cnt[NTAGS] = {0};
	for (int t = 0; t < NTAGS; t++) {
		k_of[t] = suite_alloc(m * sizeof(int));
		for (int i = 0; i < m; i++)
			k_of[t][i] = -1;
	}
	for (int k = 0; k < m; k++)
		k_of[msg_tag(k)][cnt[msg_tag(k)]++] = k;

	if (phase == 0) { /* preposted wildcards */
		for (int i = 0; i < total; i++)
			MPI_Irecv(rbuf + (size_t)i * MAXLEN, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE,
			          MPI_ANY_TAG, MPI_COMM_WORLD, &rrq[i]);
		MPI_Barrier(MPI_COMM_WORLD);
		post_sends(m, phase, sbuf, srq);
	} else if (phase == 1) { /* unexpected: everything arrives before any receive */
		post_sends(m, phase, sbuf, srq);
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < total; i++)
			MPI_Irecv(rbuf + (size_t)i * MAXLEN, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE,
			          MPI_ANY_TAG, MPI_COMM_WORLD, &rrq[i]);
	} else { /* directed: per source and tag, peers in reverse order */
		post_sends(m, phase, sbuf, srq);
		int i = 0;
		for (int d = P - 1; d >= 0; d--) {
			int src = (S.rank + d) % P;
			for (int t = 0; t < NTAGS; t++)
				for (int s = 0; s < cnt[t]; s++, i++)
					MPI_Irecv(rbuf + (size_t)i * MAXLEN, MAXLEN, MPI_BYTE, src,
					          t, MPI_COMM_WORLD, &rrq[i]);
		}
	}
	MPI_Waitall(total, rrq, st);
	/* Receives complete in posting order for matching purposes, so checking in
	 * request order checks the order in which messages were matched. */
	for (int i = 0; i < total; i++)
		verify(rbuf + (size_t)i * MAXLEN, &st[i], next_seq, k_of, phase);
	for (int src = 0; src < P; src++)
		for (int t = 0; t < NTAGS; t++)
			CHECK(next_seq[src * NTAGS + t] == cnt[t],
			      "storm: from %d tag %d got %d messages, expected %d", src, t,
			      next_seq[src * NTAGS + t], cnt[t]);
	MPI_Waitall(total, srq, MPI_STATUSES_IGNORE);
	for (int t = 0; t < NTAGS; t++)
		free(k_of[t]);
	free(next_seq);
	free(sbuf);
	free(rbuf);
	free(srq);
	free(rrq);
	free(st);
}

int main(int argc, char **argv)
{
	suite_init(&argc, &argv);
	int m = S.quick ? 300 : 2000;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--msgs") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 1000000)
				suite_usage_error(argv[0], "--msgs: expected 1..1000000");
			m = (int)v;
		} else {
			suite_usage_error(argv[0], "usage: storm [--quick] [--msgs N]");
		}
	}
	static const char *const names[] = {"preposted ANY_SOURCE/ANY_TAG",
	                                    "unexpected (sends before receives)",
	                                    "directed receives, peers reversed"};
	for (int phase = 0; phase < 3; phase++) {
		storm(m, phase);
		suite_item("storm %s: %d msgs to each of %d ranks, order per (source, tag), data",
		           names[phase], m, S.size);
	}
	return suite_finish();
}
