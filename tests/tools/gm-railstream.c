/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A verified tagged stream between two multi-rail domains of one process,
 * through the public libfabric API (tests/integration/rails-failover.sh):
 *
 *   gm-railstream [-n N] [-c CHECKPOINT] [-r RESUME_FILE] [--expect-fail] SRC_DOMAIN DST_DOMAIN
 *
 * SRC_DOMAIN and DST_DOMAIN are multi-rail domains ("a+b", in
 * FI_GAMMA_IFACE).  N messages (default 3000) of sizes from 8 B to 1.2 MB
 * (eager, medium, rendezvous; the two largest striped over the rails in
 * chunks) go from SRC to DST, each with its index as
 * tag and a payload derived from it; DST checks every byte and the order.
 * After CHECKPOINT messages it prints "checkpoint" and, at twice that, waits
 * (progressing) until RESUME_FILE exists, so that a script can take rails
 * down while the stream runs.  It prints "verified N messages" and exits 0;
 * with --expect-fail it expects the stream to fail instead (every rail
 * down), prints the error naming the peer and exits 0, exits 1 if it did
 * not fail.  A stream that stops for 60 s is a failure too.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "gmf.h"

#define WINDOW  8
#define STALL_S 60.0

static const size_t sizes[] = {8, 1000, 6000, 70000, 300000, 1200000};
#define NSIZES   (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_SIZE 1200000

struct side {
	const char *domain;
	struct gmf g;
	struct fid_ep *ep;
	fi_addr_t peer;
	char peer_name[256];
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "FAIL: %s: %d (%s)\n", what, rc, fi_strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint8_t pattern(uint64_t i, size_t j)
{
	return (uint8_t)(i * 131u + j * 7u + (j >> 9));
}

static void side_open(struct side *s)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fi_av_attr av = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
	const char *what = NULL;
	int r;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_DIRECTED_RECV;
	hints->fabric_attr->prov_name = strdup("gamma");
	hints->domain_attr->name = strdup(s->domain);
	r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (r)
		die(s->domain, r);
	if ((r = gmf_open(&s->g, info, NULL, &cq, &av, &what)) ||
	    (r = gmf_ep(&s->g, NULL, NULL, 0, &s->ep, &what)))
		die(what, r);
}

/* Each side's AV gets the other: a frame moved to rail 1 must find its connection. */
static void insert(struct side *from, struct side *to)
{
	char addr[64];
	size_t len = sizeof(addr), nlen = sizeof(from->peer_name);

	if (fi_getname(&to->ep->fid, addr, &len))
		die("fi_getname", -FI_EINVAL);
	if (fi_av_insert(from->g.av, addr, 1, &from->peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	fi_av_straddr(from->g.av, addr, from->peer_name, &nlen);
}

/* One completion or error; returns 1 when one came, 0 if none, -errno on an error entry. */
static int poll_cq(struct side *s, struct fi_cq_tagged_entry *e)
{
	ssize_t n = fi_cq_read(s->g.cq, e, 1);
	struct fi_cq_err_entry err = {0};

	if (n == 1)
		return 1;
	if (n == -FI_EAGAIN)
		return 0;
	if (n != -FI_EAVAIL)
		die("fi_cq_read", (int)n);
	fi_cq_readerr(s->g.cq, &err, 0);
	return -err.err;
}

int main(int argc, char **argv)
{
	uint64_t n = 3000, checkpoint = 0, sent = 0, sdone = 0, posted = 0, rdone = 0;
	const char *resume = NULL;
	bool expect_fail = false;
	struct side a = {0}, b = {0};
	uint8_t *sbuf[WINDOW], *rbuf[WINDOW];
	bool sent_done[WINDOW] = {false};
	uint64_t i;
	int opt;

	while ((opt = getopt(argc, argv, "n:c:r:f")) != -1) {
		if (opt == 'n')
			n = strtoull(optarg, NULL, 0);
		else if (opt == 'c')
			checkpoint = strtoull(optarg, NULL, 0);
		else if (opt == 'r')
			resume = optarg;
		else if (opt == 'f')
			expect_fail = true;
		else
			return 2;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: gm-railstream [-n N] [-c CHECKPOINT] [-r RESUME_FILE] [-f] "
		                "SRC_DOMAIN DST_DOMAIN\n");
		return 2;
	}
	a.domain = argv[optind];
	b.domain = argv[optind + 1];
	side_open(&a);
	side_open(&b);
	insert(&a, &b);
	insert(&b, &a);
	for (int k = 0; k < WINDOW; k++)
		if (!(sbuf[k] = malloc(MAX_SIZE)) || !(rbuf[k] = malloc(MAX_SIZE)))
			die("malloc", -FI_ENOMEM);

	double last = now_s();
	bool said = false;
	while (rdone < n || sdone < n) {
		struct fi_cq_tagged_entry e;
		int rc;

		/* Receives in order, directed at the sender, each its own buffer slot. */
		while (posted < n && posted - rdone < WINDOW) {
			rc = (int)fi_trecv(b.ep, rbuf[posted % WINDOW], MAX_SIZE, NULL, b.peer,
			                   posted, 0, (void *)(uintptr_t)posted);
			if (rc == -FI_EAGAIN)
				break;
			if (rc)
				die("fi_trecv", rc);
			posted++;
		}
		bool hold =
		    resume && checkpoint && sent >= 2 * checkpoint && access(resume, F_OK) != 0;
		while (!hold && sent < n && sent - sdone < WINDOW) {
			size_t len = sizes[sent % NSIZES];
			uint8_t *p = sbuf[sent % WINDOW];

			for (size_t j = 0; j < len; j++)
				p[j] = pattern(sent, j);
			rc = (int)fi_tsend(a.ep, p, len, NULL, a.peer, sent,
			                   (void *)(uintptr_t)sent);
			if (rc == -FI_EAGAIN)
				break;
			if (rc)
				die("fi_tsend", rc);
			sent++;
		}
		if (checkpoint && !said && rdone >= checkpoint) {
			printf("checkpoint %lu\n", (unsigned long)rdone);
			fflush(stdout);
			said = true;
		}
		while ((rc = poll_cq(&a, &e)) != 0) {
			if (rc < 0) {
				printf("error: send to peer %s failed: %s\n", a.peer_name,
				       fi_strerror(-rc));
				fflush(stdout);
				return expect_fail ? 0 : 1;
			}
			/* A rendezvous send completes once pulled, after later eager ones:
			 * a slot is free again when every send before it completed. */
			i = (uint64_t)(uintptr_t)e.op_context;
			if (i < sdone || i >= sent || sent_done[i % WINDOW])
				die("a send completed twice, or one never posted", -FI_EOTHER);
			sent_done[i % WINDOW] = true;
			while (sdone < sent && sent_done[sdone % WINDOW])
				sent_done[sdone++ % WINDOW] = false;
			last = now_s();
		}
		while ((rc = poll_cq(&b, &e)) != 0) {
			const uint8_t *p;
			size_t len;

			i = (uint64_t)(uintptr_t)e.op_context;
			p = rbuf[i % WINDOW];
			len = sizes[i % NSIZES];
			if (rc < 0) {
				printf("error: receive from peer %s failed: %s\n", b.peer_name,
				       fi_strerror(-rc));
				fflush(stdout);
				return expect_fail ? 0 : 1;
			}
			if (i != rdone || e.tag != i || e.len != len) {
				fprintf(stderr, "FAIL: message %lu: got #%lu tag %lu len %zu\n",
				        (unsigned long)rdone, (unsigned long)i,
				        (unsigned long)e.tag, e.len);
				return 1;
			}
			for (size_t j = 0; j < len; j++)
				if (p[j] != pattern(i, j)) {
					fprintf(stderr, "FAIL: message %lu byte %zu: %u, not %u\n",
					        (unsigned long)i, j, p[j], pattern(i, j));
					return 1;
				}
			rdone++;
			last = now_s();
		}
		if (!hold && now_s() - last > STALL_S) {
			fprintf(stderr,
			        "FAIL: no progress for %.0f s: sent %lu, %lu completed, "
			        "%lu received\n",
			        STALL_S, (unsigned long)sent, (unsigned long)sdone,
			        (unsigned long)rdone);
			return 1;
		}
		if (hold)
			last = now_s();
	}
	if (expect_fail) {
		printf("FAIL: every message arrived though every rail was down\n");
		return 1;
	}
	printf("verified %lu messages\n", (unsigned long)n);
	fflush(stdout);
	fi_close(&a.ep->fid);
	fi_close(&b.ep->fid);
	gmf_close(&a.g);
	gmf_close(&b.g);
	return 0;
}
