/* Matching semantics: wildcards with status checks, out-of-order tags (unexpected
 * queue), probe/iprobe/mprobe/improbe+mrecv, synchronous sends, persistent
 * requests and cancel of a posted receive. Needs at least 2 ranks.
 */
#include "suite.h"

#define K 8 /* messages per sender in the wildcard test */

static size_t wild_size(int src, int k)
{
	/* small, eager and rendezvous messages mixed */
	static const size_t sz[] = {0, 5, 64, 3000, 70000, 1 << 20, 17, 200000};
	return sz[(src + k) % 8];
}

/* Every rank except root sends K messages (tags increasing); root receives them all
 * with MPI_ANY_SOURCE/MPI_ANY_TAG and checks source, tag, count, data and that each
 * source's messages arrive in send order (non-overtaking). */
static void wildcard_test(int root)
{
	const int base = 1000;
	if (S.rank != root) {
		MPI_Request rq[K];
		uint8_t *b[K];
		for (int k = 0; k < K; k++) {
			size_t n = wild_size(S.rank, k);
			b[k] = suite_alloc(n);
			suite_fill(b[k], n, suite_seed(S.rank, n, k));
			MPI_Isend(b[k], (int)n, MPI_BYTE, root, base + k, MPI_COMM_WORLD, &rq[k]);
		}
		MPI_Waitall(K, rq, MPI_STATUSES_IGNORE);
		for (int k = 0; k < K; k++)
			free(b[k]);
		return;
	}
	int next[64] = {0};
	size_t cap = (1 << 20) + SUITE_GUARD;
	uint8_t *rbuf = suite_alloc(cap);
	for (int m = 0; m < (S.size - 1) * K; m++) {
		MPI_Status st;
		memset(rbuf, SUITE_CANARY, cap);
		MPI_Recv(rbuf, (int)cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
		         &st);
		int src = st.MPI_SOURCE, k = st.MPI_TAG - base;
		if (src < 0 || src >= S.size || src == root || src >= 64 || k < 0 || k >= K) {
			suite_error("wildcard: impossible status source %d tag %d", src,
			            st.MPI_TAG);
			continue;
		}
		CHECK(k == next[src],
		      "wildcard: from rank %d got tag %d before tag %d (overtaking)", src,
		      st.MPI_TAG, base + next[src]);
		next[src] = k + 1;
		size_t n = wild_size(src, k);
		char what[64];
		snprintf(what, sizeof(what), "wildcard msg %d from rank %d", k, src);
		suite_check_status(what, &st, src, base + k, MPI_BYTE, (int)n);
		suite_check_msg(what, rbuf, n, suite_seed(src, n, k));
	}
	for (int r = 0; r < S.size && r < 64; r++)
		CHECK(r == root || next[r] == K, "wildcard: got %d of %d messages from rank %d",
		      next[r], K, r);
	free(rbuf);
}

/* Rank 1 sends tags 1..3 (small and large); rank 0 receives 3, 1, 2 by specific tag,
 * then with ANY_TAG from a specific source and ANY_SOURCE with a specific tag. */
static void tag_order_test(size_t n)
{
	if (S.rank > 1)
		return;
	if (S.rank == 1) {
		MPI_Request rq[5];
		uint8_t *b = suite_alloc(5 * n + 1);
		for (int t = 0; t < 5; t++) {
			suite_fill(b + t * n, n, suite_seed(1, n, t + 1));
			MPI_Isend(b + t * n, (int)n, MPI_BYTE, 0, t + 1, MPI_COMM_WORLD, &rq[t]);
		}
		MPI_Waitall(5, rq, MPI_STATUSES_IGNORE);
		free(b);
		return;
	}
	uint8_t *r = suite_alloc(n + SUITE_GUARD);
	static const int order[] = {3, 1, 2};
	MPI_Status st;
	char what[64];
	for (int i = 0; i < 3; i++) {
		memset(r, SUITE_CANARY, n + SUITE_GUARD);
		MPI_Recv(r, (int)(n + SUITE_GUARD), MPI_BYTE, 1, order[i], MPI_COMM_WORLD, &st);
		snprintf(what, sizeof(what), "tag %d received out of order (%zu B)", order[i], n);
		suite_check_status(what, &st, 1, order[i], MPI_BYTE, (int)n);
		suite_check_msg(what, r, n, suite_seed(1, n, order[i]));
	}
	memset(r, SUITE_CANARY, n + SUITE_GUARD);
	MPI_Recv(r, (int)(n + SUITE_GUARD), MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
	snprintf(what, sizeof(what), "ANY_TAG from rank 1 (%zu B)", n);
	suite_check_status(what, &st, 1, 4, MPI_BYTE, (int)n);
	suite_check_msg(what, r, n, suite_seed(1, n, 4));
	memset(r, SUITE_CANARY, n + SUITE_GUARD);
	MPI_Recv(r, (int)(n + SUITE_GUARD), MPI_BYTE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
	snprintf(what, sizeof(what), "ANY_SOURCE tag 5 (%zu B)", n);
	suite_check_status(what, &st, 1, 5, MPI_BYTE, (int)n);
	suite_check_msg(what, r, n, suite_seed(1, n, 5));
	free(r);
}

/* Rank 1 sends three messages; rank 0 finds them with Probe, Iprobe, Mprobe/Mrecv
 * and Improbe/Imrecv, sizing each receive from the probed status. */
static void probe_test(size_t n)
{
	if (S.rank > 1)
		return;
	enum { NP = 4 };
	if (S.rank == 1) {
		MPI_Request rq[NP];
		uint8_t *b = suite_alloc(NP * (n + NP));
		for (int t = 0; t < NP; t++) {
			size_t len = n + t;
			suite_fill(b + t * (n + NP), len, suite_seed(1, len, 40 + t));
			MPI_Isend(b + t * (n + NP), (int)len, MPI_BYTE, 0, 40 + t, MPI_COMM_WORLD,
			          &rq[t]);
		}
		MPI_Waitall(NP, rq, MPI_STATUSES_IGNORE);
		free(b);
		return;
	}
	for (int t = 0; t < NP; t++) {
		MPI_Status st, pst;
		MPI_Message msg;
		int flag = 0, count = -1;
		const char *how[NP] = {"probe", "iprobe", "mprobe+mrecv", "improbe+imrecv"};
		size_t len = n + t;
		switch (t) {
		case 0:
			MPI_Probe(MPI_ANY_SOURCE, 40, MPI_COMM_WORLD, &pst);
			break;
		case 1:
			while (!flag)
				MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &pst);
			break;
		case 2:
			MPI_Mprobe(1, 42, MPI_COMM_WORLD, &msg, &pst);
			break;
		case 3:
			while (!flag)
				MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
				            &msg, &pst);
			break;
		}
		char what[64];
		snprintf(what, sizeof(what), "%s (%zu B)", how[t], len);
		suite_check_status(what, &pst, 1, 40 + t, MPI_BYTE, (int)len);
		MPI_Get_count(&pst, MPI_BYTE, &count);
		if (count < 0)
			count = 0;
		uint8_t *r = suite_alloc((size_t)count + SUITE_GUARD);
		memset(r, SUITE_CANARY, (size_t)count + SUITE_GUARD);
		if (t < 2) {
			MPI_Recv(r, count, MPI_BYTE, pst.MPI_SOURCE, pst.MPI_TAG, MPI_COMM_WORLD,
			         &st);
		} else if (t == 2) {
			MPI_Mrecv(r, count, MPI_BYTE, &msg, &st);
			CHECK(msg == MPI_MESSAGE_NULL, "mrecv: message handle not reset");
		} else {
			MPI_Request rq;
			MPI_Imrecv(r, count, MPI_BYTE, &msg, &rq);
			MPI_Wait(&rq, &st);
		}
		suite_check_status(what, &st, 1, 40 + t, MPI_BYTE, (int)len);
		suite_check_msg(what, r, len, suite_seed(1, len, 40 + t));
		free(r);
	}
}

/* Issend must not complete before the matching receive is posted: rank 1 issends,
 * tests (must be incomplete), then tells rank 0 to post the receive. */
static void ssend_test(size_t n)
{
	if (S.rank > 1)
		return;
	int go = 0x60;
	if (S.rank == 1) {
		uint8_t *b = suite_alloc(n + 1);
		suite_fill(b, n, suite_seed(1, n, 77));
		MPI_Request rq;
		int flag = 1;
		MPI_Issend(b, (int)n, MPI_BYTE, 0, 77, MPI_COMM_WORLD, &rq);
		for (int i = 0; i < 100; i++) {
			MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
			if (flag)
				break;
		}
		CHECK(!flag, "issend %zu B completed before the receive was posted", n);
		MPI_Send(&go, 1, MPI_INT, 0, 78, MPI_COMM_WORLD);
		if (!flag)
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
		/* and a plain blocking Ssend */
		suite_fill(b, n, suite_seed(1, n, 79));
		MPI_Ssend(b, (int)n, MPI_BYTE, 0, 79, MPI_COMM_WORLD);
		free(b);
		return;
	}
	int got = 0;
	MPI_Status st;
	MPI_Recv(&got, 1, MPI_INT, 1, 78, MPI_COMM_WORLD, &st);
	CHECK(got == go, "ssend: go message carried %d", got);
	uint8_t *r = suite_recv_buf(n);
	char what[64];
	snprintf(what, sizeof(what), "issend %zu B", n);
	MPI_Recv(r, (int)(n + SUITE_GUARD), MPI_BYTE, 1, 77, MPI_COMM_WORLD, &st);
	suite_check_status(what, &st, 1, 77, MPI_BYTE, (int)n);
	suite_check_msg(what, r, n, suite_seed(1, n, 77));
	memset(r, SUITE_CANARY, n + SUITE_GUARD);
	snprintf(what, sizeof(what), "ssend %zu B", n);
	MPI_Recv(r, (int)(n + SUITE_GUARD), MPI_BYTE, 1, 79, MPI_COMM_WORLD, &st);
	suite_check_status(what, &st, 1, 79, MPI_BYTE, (int)n);
	suite_check_msg(what, r, n, suite_seed(1, n, 79));
	free(r);
}

/* Persistent ring: send_init/recv_init once, then startall/waitall with new data
 * in the send buffer each round. */
static void persistent_test(size_t n, int rounds)
{
	int right = (S.rank + 1) % S.size, left = (S.rank + S.size - 1) % S.size;
	uint8_t *s = suite_alloc(n + 1), *r = suite_alloc(n + SUITE_GUARD);
	MPI_Request rq[2];
	MPI_Status st[2];
	MPI_Recv_init(r, (int)(n + SUITE_GUARD), MPI_BYTE, left, 90, MPI_COMM_WORLD, &rq[0]);
	MPI_Send_init(s, (int)n, MPI_BYTE, right, 90, MPI_COMM_WORLD, &rq[1]);
	for (int i = 0; i < rounds; i++) {
		suite_fill(s, n, suite_seed(S.rank, n, 900 + i));
		memset(r, SUITE_CANARY, n + SUITE_GUARD);
		MPI_Startall(2, rq);
		MPI_Waitall(2, rq, st);
		char what[64];
		snprintf(what, sizeof(what), "persistent %zu B round %d", n, i);
		suite_check_status(what, &st[0], left, 90, MPI_BYTE, (int)n);
		suite_check_msg(what, r, n, suite_seed(left, n, 900 + i));
	}
	MPI_Request_free(&rq[0]);
	MPI_Request_free(&rq[1]);
	free(s);
	free(r);
}

static void cancel_test(void)
{
	int buf = 0, flag = 0;
	MPI_Request rq;
	MPI_Status st;
	MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &rq);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	MPI_Test_cancelled(&st, &flag);
	CHECK(flag, "cancelled receive (never matched) reports not cancelled");
}

int main(int argc, char **argv)
{
	suite_init(&argc, &argv);
	if (argc > 1)
		suite_usage_error(argv[0], "usage: matching [--quick]");
	if (S.size < 2 || S.size > 64)
		suite_usage_error(argv[0], "matching needs 2..64 ranks");

	for (int root = 0; root < S.size; root++) {
		wildcard_test(root);
		suite_item("ANY_SOURCE/ANY_TAG at root %d: %d msgs per sender, status, order, data",
		           root, K);
	}
	static const size_t sizes[] = {0, 40, 4000, 1 << 20};
	for (int i = 0; i < 4; i++) {
		size_t n = sizes[i];
		tag_order_test(n);
		suite_item("out-of-order tags, ANY_TAG/ANY_SOURCE with specific peer, %zu B", n);
		probe_test(n);
		suite_item("probe/iprobe/mprobe+mrecv/improbe+imrecv, %zu B", n);
		ssend_test(n);
		suite_item("issend incomplete until receive posted, ssend, %zu B", n);
		persistent_test(n, 10);
		suite_item("persistent send_init/recv_init/startall x10, %zu B", n);
	}
	cancel_test();
	suite_item("cancel of an unmatched receive");
	return suite_finish();
}
