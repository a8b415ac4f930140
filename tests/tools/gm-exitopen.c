/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A program that leaves gamma busy when it exits (exit-open.sh): it opens a
 * domain and an endpoint with a secret, sends to a port on its own
 * interface that nobody listens on (so frames stay unacknowledged and the
 * progress thread keeps retransmitting), and returns from main without
 * closing anything, as an aborting MPI rank or a careless program does.
 * libfabric then unloads the provider at exit; the provider's threads must
 * be stopped by then.  Prints "sent N" and exits 0, or a FAIL line and 1.
 *
 * With "signal", it then polls the CQ for ever under a SIGTERM handler that
 * calls exit(3), as libinfinipath's does: the signal lands inside the
 * provider, with the domain lock held, and the exit must still complete.
 *
 *   gm-exitopen IFACE NSENDS [signal]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

static char buf[65536];

static void exit_on_term(int sig)
{
	(void)sig;
	exit(3);
}

static int die(const char *what, int rc)
{
	printf("FAIL: %s: %d (%s)\n", what, rc, fi_strerror(rc < 0 ? -rc : rc));
	return 1;
}

int main(int argc, char **argv)
{
	static const uint8_t secret[32] = "gm-exitopen test secret 32 bytes";
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	uint8_t name[64];
	size_t namelen = sizeof(name);
	fi_addr_t nobody;
	int n, rc;

	if (argc < 3 || argc > 4 || (n = atoi(argv[2])) < 1 ||
	    (argc == 4 && strcmp(argv[3], "signal"))) {
		fprintf(stderr, "usage: gm-exitopen IFACE NSENDS [signal]\n");
		return 2;
	}
	hints = fi_allocinfo();
	if (!hints)
		return die("fi_allocinfo", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->fabric_attr->prov_name = strdup("gamma");
	hints->domain_attr->name = strdup(argv[1]);
	hints->domain_attr->auth_key = malloc(sizeof(secret));
	if (!hints->domain_attr->auth_key)
		return die("malloc", -FI_ENOMEM);
	memcpy(hints->domain_attr->auth_key, secret, sizeof(secret));
	hints->domain_attr->auth_key_size = sizeof(secret);
	if ((rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info)))
		return die("fi_getinfo", rc);
	if ((rc = fi_fabric(info->fabric_attr, &fabric, NULL)))
		return die("fi_fabric", rc);
	if ((rc = fi_domain(fabric, info, &domain, NULL)))
		return die("fi_domain", rc);
	if ((rc = fi_cq_open(domain, &cq_attr, &cq, NULL)))
		return die("fi_cq_open", rc);
	if ((rc = fi_av_open(domain, &av_attr, &av, NULL)))
		return die("fi_av_open", rc);
	if ((rc = fi_endpoint(domain, info, &ep, NULL)))
		return die("fi_endpoint", rc);
	if ((rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (rc = fi_ep_bind(ep, &av->fid, 0)) || (rc = fi_enable(ep)))
		return die("binding the endpoint", rc);
	if ((rc = fi_getname(&ep->fid, name, &namelen)))
		return die("fi_getname", rc);
	/* Our own MAC, another port: the frames go out and nobody answers. */
	name[namelen - 1] ^= 0x55;
	if (fi_av_insert(av, name, 1, &nobody, 0, NULL) != 1)
		return die("fi_av_insert", -FI_EINVAL);
	for (int i = 0; i < n; i++) {
		rc = fi_tsend(ep, buf, sizeof(buf), NULL, nobody, 1, NULL);
		if (rc)
			return die("fi_tsend", rc);
	}
	for (int i = 0; i < 100; i++) {
		struct fi_cq_tagged_entry e;

		fi_cq_read(cq, &e, 1);
	}
	printf("sent %d\n", n);
	if (argc == 4) {
		signal(SIGTERM, exit_on_term);
		printf("polling\n");
		fflush(stdout);
		for (;;) {
			struct fi_cq_tagged_entry e;

			fi_cq_read(cq, &e, 1);
		}
	}
	return 0;
}
