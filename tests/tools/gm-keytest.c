/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job isolation by auth_key, through the public libfabric API:
 *
 *   gm-keytest IF_A IF_B
 *
 * A (on IF_A) and B (on IF_B) share key K1; C (on IF_B) has K2, set at
 * domain level (hints->domain_attr->auth_key, as btl gamma does); D (on
 * IF_B) has K2 at endpoint level (ep_attr->auth_key over a K1 domain).
 * A->B must deliver every byte; A->C and A->D must deliver nothing, the
 * sends (FI_TRANSMIT_COMPLETE: done when acknowledged) failing once the peer timeout passes (run
 * with a short FI_GAMMA_PEER_TIMEOUT), and C->A nothing either.  The frames C and D drop are
 * counted as bad_key: run with FI_GAMMA_STATS=1 and check the counters printed at close
 * (tests/integration/isolation.sh does).
 *
 *   gm-keytest --secret IF_A IF_B
 *
 * The same with 32-byte secrets in place of the 4-byte keys (every frame
 * carries a MAC), plus E (on IF_B), opened under K2 and switched to K1 by
 * fi_setopt(FI_OPT_GAMMA_AUTH_KEY) as btl gamma does: A->E must deliver;
 * and F (on IF_B), which keeps K2 while A and F each seal what they send
 * the other under that one's secret (FI_OPT_GAMMA_PEER_AUTH_KEY, as btl
 * gamma does for a spawned job): A->F and F->A must deliver.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "fi_gamma.h"
#include "gmf.h"

#define K1   0x1111aaaau
#define K2   0x2222bbbbu
#define NMSG 3

struct side {
	const char *name, *ifname;
	struct gmf g; /* info, fabric, domain, CQ, AV */
	struct fid_ep *ep;
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "FAIL: %s: %d (%s)\n", what, rc, fi_strerror(rc < 0 ? -rc : rc));
	exit(1);
}

#define CHK(call)                                                                                  \
	do {                                                                                       \
		int _r = (int)(call);                                                              \
		if (_r < 0)                                                                        \
			die(#call, _r);                                                            \
	} while (0)

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static bool g_secret; /* 32-byte secrets made from K1/K2 instead of the 4-byte keys */

static size_t key_len(void)
{
	return g_secret ? 32 : sizeof(uint32_t);
}

static uint8_t *key_dup(uint32_t key)
{
	uint8_t *k = malloc(key_len());

	if (!k)
		die("malloc", -FI_ENOMEM);
	for (size_t i = 0; i < key_len(); i += sizeof(key))
		memcpy(k + i, &key, sizeof(key));
	return k;
}

/* dom_key goes in the getinfo hints; ep_key (if any) on the endpoint's info. */
static void side_open(struct side *s, uint32_t dom_key, uint32_t ep_key)
{
	struct fi_info *hints = fi_allocinfo();
	uint32_t got;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT;
	hints->fabric_attr->prov_name = strdup("gamma");
	hints->domain_attr->name = strdup(s->ifname);
	hints->domain_attr->auth_key = key_dup(dom_key);
	hints->domain_attr->auth_key_size = key_len();
	struct fi_info *info;
	const char *what = NULL;
	CHK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	/* The offer must carry the key asked for. */
	if (info->domain_attr->auth_key_size != key_len())
		die("fi_getinfo dropped the domain auth_key", -FI_EINVAL);
	memcpy(&got, info->domain_attr->auth_key, sizeof(got));
	if (got != dom_key)
		die("fi_getinfo changed the domain auth_key", -FI_EINVAL);
	if (ep_key) {
		free(info->ep_attr->auth_key);
		info->ep_attr->auth_key = key_dup(ep_key);
		info->ep_attr->auth_key_size = key_len();
	}
	struct fi_av_attr av = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE};
	int r;
	if ((r = gmf_open(&s->g, info, NULL, &cq, &av, &what)) ||
	    (r = gmf_ep(&s->g, NULL, NULL, 0, &s->ep, &what)))
		die(what, r);
}

static void side_close(struct side *s)
{
	CHK(fi_close(&s->ep->fid));
	CHK(gmf_close(&s->g));
}

static fi_addr_t insert(struct side *from, struct side *to)
{
	char addr[64];
	size_t len = sizeof(addr);
	fi_addr_t fa;

	CHK(fi_getname(&to->ep->fid, addr, &len));
	if (fi_av_insert(from->g.av, addr, 1, &fa, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	return fa;
}

#define NSIDES 6
static struct side *all[NSIDES];
static int nsides;

/* Progress every side; count successful and failed completions of s. */
static void poll_all(struct side *s, int *ok, int *err)
{
	for (int i = 0; i < nsides; i++) {
		struct fi_cq_msg_entry e;
		ssize_t r = fi_cq_read(all[i]->g.cq, &e, all[i] == s ? 1 : 0);

		if (all[i] != s)
			continue;
		if (r == 1) {
			(*ok)++;
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = {0};
			CHK(fi_cq_readerr(s->g.cq, &ee, 0));
			(*err)++;
		} else if (r != -FI_EAGAIN) {
			die("fi_cq_read", (int)r);
		}
	}
}

static uint8_t pattern(int m, size_t i)
{
	return (uint8_t)(m * 37 + i * 11 + (i >> 7));
}

/*
 * NMSG messages from -> to; to has NMSG receives posted.  Returns how many
 * arrived (each checked byte by byte); the sends must all complete, in
 * error if nothing arrived, within timeout.
 */
static int exchange(struct side *from, struct side *to, double timeout, bool expect_delivery)
{
	static uint8_t sbuf[NMSG][3000], rbuf[NMSG][3000];
	struct fi_context sctx[NMSG], rctx[NMSG];
	fi_addr_t dest = insert(from, to);
	int sent_ok = 0, sent_err = 0, rcvd = 0, rerr = 0;
	double t0 = now_s();

	insert(to, from);
	memset(rbuf, 0, sizeof(rbuf));
	for (int m = 0; m < NMSG; m++) {
		for (size_t i = 0; i < sizeof(sbuf[m]); i++)
			sbuf[m][i] = pattern(m, i);
		CHK(fi_recv(to->ep, rbuf[m], sizeof(rbuf[m]), NULL, FI_ADDR_UNSPEC, &rctx[m]));
	}
	for (int m = 0; m < NMSG; m++) {
		/* one eager and two medium (fragmented) messages */
		size_t len = m ? sizeof(sbuf[m]) : 100;
		ssize_t r;
		struct iovec iov = {.iov_base = sbuf[m], .iov_len = len};
		struct fi_msg msg = {
		    .msg_iov = &iov, .iov_count = 1, .addr = dest, .context = &sctx[m]};
		/* complete only once the peer acknowledged: a dropped send must fail */
		while ((r = fi_sendmsg(from->ep, &msg, FI_TRANSMIT_COMPLETE | FI_COMPLETION)) ==
		       -FI_EAGAIN)
			poll_all(from, &sent_ok, &sent_err);
		CHK(r);
	}
	while (sent_ok + sent_err < NMSG || (expect_delivery && rcvd < NMSG)) {
		poll_all(from, &sent_ok, &sent_err);
		poll_all(to, &rcvd, &rerr);
		if (now_s() - t0 > timeout) {
			fprintf(stderr,
			        "FAIL: %s->%s: %d sends done (%d failed), %d received in %.0f s\n",
			        from->name, to->name, sent_ok + sent_err, sent_err, rcvd, timeout);
			exit(1);
		}
	}
	/* Give stray deliveries a moment to show up. */
	for (double t1 = now_s(); now_s() - t1 < 0.2;)
		poll_all(to, &rcvd, &rerr);
	for (int m = 0; m < rcvd && m < NMSG; m++) {
		size_t len = m ? sizeof(sbuf[m]) : 100;
		for (size_t i = 0; i < len; i++)
			if (rbuf[m][i] != pattern(m, i)) {
				fprintf(stderr,
				        "FAIL: %s->%s message %d byte %zu: 0x%02x, want 0x%02x\n",
				        from->name, to->name, m, i, rbuf[m][i], pattern(m, i));
				exit(1);
			}
	}
	printf("%s->%s: %d sent, %d failed, %d received\n", from->name, to->name, sent_ok, sent_err,
	       rcvd);
	if (expect_delivery && (rcvd != NMSG || sent_err)) {
		fprintf(stderr, "FAIL: same key, yet not every message went through\n");
		exit(1);
	}
	if (!expect_delivery && (rcvd || sent_ok)) {
		fprintf(stderr, "FAIL: a message crossed between different keys\n");
		exit(1);
	}
	return rcvd;
}

/* from seals what it sends to to under key's secret; a bad request changes nothing. */
static void bind_peer(struct side *from, struct side *to, uint32_t key)
{
	uint8_t *k = key_dup(key);
	struct fi_gamma_peer_key pk = {insert(from, to), k, key_len()};
	struct fi_gamma_peer_key stranger = {pk.addr + 1000, k, key_len()}, shorty = pk;

	shorty.key_len = 5;
	if (fi_setopt(&from->ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_PEER_AUTH_KEY, &stranger,
	              sizeof(stranger)) != -FI_EINVAL ||
	    fi_setopt(&from->ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_PEER_AUTH_KEY, &shorty,
	              sizeof(shorty)) != -FI_EINVAL ||
	    fi_setopt(&from->ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_PEER_AUTH_KEY, &pk,
	              sizeof(pk) - 1) != -FI_EINVAL)
		die("FI_OPT_GAMMA_PEER_AUTH_KEY took an address not in the AV, a 5-byte secret or "
		    "a short option",
		    -FI_EINVAL);
	CHK(fi_setopt(&from->ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_PEER_AUTH_KEY, &pk,
	              sizeof(pk)));
	free(k);
}

int main(int argc, char **argv)
{
	struct side A = {.name = "A(K1)"}, B = {.name = "B(K1)"}, C = {.name = "C(K2 domain)"},
	            D = {.name = "D(K2 ep)"}, E = {.name = "E(K2, then K1 by fi_setopt)"},
	            F = {.name = "F(K2, A bound to K1)"};

	if (argc == 4 && !strcmp(argv[1], "--secret")) {
		g_secret = true;
		argv++, argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s [--secret] IF_A IF_B\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	A.ifname = argv[1];
	B.ifname = C.ifname = D.ifname = E.ifname = F.ifname = argv[2];
	side_open(&A, K1, 0);
	side_open(&B, K1, 0);
	side_open(&C, K2, 0);
	side_open(&D, K1, K2);
	all[nsides++] = &A, all[nsides++] = &B, all[nsides++] = &C, all[nsides++] = &D;
	exchange(&A, &B, 30, true);
	exchange(&A, &C, 60, false);
	exchange(&A, &D, 60, false);
	exchange(&C, &A, 60, false);
	if (g_secret) {
		uint8_t *k1 = key_dup(K1);
		uint32_t id_a = 0, id_e = 0;
		size_t n = sizeof(id_a);

		side_open(&E, K2, 0);
		all[nsides++] = &E;
		CHK(fi_setopt(&E.ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_AUTH_KEY, k1, key_len()));
		free(k1);
		CHK(fi_getopt(&A.ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_KEY_ID, &id_a, &n));
		CHK(fi_getopt(&E.ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_KEY_ID, &id_e, &n));
		if (id_a != id_e || id_a == K1)
			die("key ids after fi_setopt", -FI_EINVAL);
		/* A short secret is refused and changes nothing. */
		if (fi_setopt(&E.ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_AUTH_KEY, "short", 5) !=
		    -FI_EINVAL)
			die("fi_setopt took a 5-byte key", -FI_EINVAL);
		exchange(&A, &E, 30, true);
		side_open(&F, K2, 0);
		all[nsides++] = &F;
		bind_peer(&A, &F, K2);
		bind_peer(&F, &A, K1);
		exchange(&A, &F, 30, true);
		exchange(&F, &A, 30, true);
		side_close(&F);
		side_close(&E);
	}
	side_close(&D);
	side_close(&C);
	side_close(&B);
	side_close(&A);
	printf("ok: same %s delivers, different ones (domain or endpoint level) do not%s\n",
	       g_secret ? "secret" : "key",
	       g_secret ? "; fi_setopt switches an endpoint, or binds a peer to its secret" : "");
	return 0;
}
