/* libfabric setup, posting and completion waits of gamma-pingpong. */
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl.h"
#include "fab.h"

#define PP_FI_VERSION FI_VERSION(1, 9)

static struct fi_info *make_hints(const char *prov, const char *domain)
{
	struct fi_info *h = fi_allocinfo();
	if (!h)
		return NULL;
	h->caps = FI_MSG | FI_TAGGED;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup(prov);
	if (domain)
		h->domain_attr->name = strdup(domain);
	return h;
}

/* fi_getinfo found nothing: say why in terms the user can act on. */
static void explain_no_info(const struct pp_opts *o, const char *domain, int ret)
{
	struct fi_info *h = fi_allocinfo(), *any = NULL;
	h->fabric_attr->prov_name = strdup(o->provider);
	int r = fi_getinfo(PP_FI_VERSION, NULL, NULL, 0, h, &any);
	fi_freeinfo(h);
	fi_freeinfo(any);
	if (r) {
		const char *path = getenv("FI_PROVIDER_PATH");
		pp_err("libfabric lists no provider '%s' ('fi_info -p %s' is empty; "
		       "FI_PROVIDER_PATH=%s): "
		       "source tools/gamma-env.sh after make, or make install; "
		       "'fi_info -l' lists the providers libfabric loaded",
		       o->provider, o->provider, path ? path : "unset");
	} else if (domain) {
		pp_err(
		    "provider '%s' offers no FI_EP_RDM endpoint with FI_MSG|FI_TAGGED on "
		    "interface '%s' (does it have an address? 'fi_info -p %s' lists domains): %s",
		    o->provider, domain, o->provider, fi_strerror(-ret));
	} else {
		pp_err("provider '%s' offers no FI_EP_RDM endpoint with FI_MSG|FI_TAGGED: %s",
		       o->provider, fi_strerror(-ret));
	}
}

/* The IPv4 address the control connection uses on this side, or 0. */
static uint32_t ctrl_local_ipv4(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET)
		return ((struct sockaddr_in *)&ss)->sin_addr.s_addr;
	struct in6_addr *a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;
	if (ss.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(a6)) {
		uint32_t v4;
		memcpy(&v4, &a6->s6_addr[12], 4);
		return v4;
	}
	return 0;
}

static bool near_ctrl(const struct fi_info *i, uint32_t ip)
{
	const struct sockaddr_in *sin = i->src_addr;
	return ip && i->addr_format == FI_SOCKADDR_IN && sin && sin->sin_addr.s_addr == ip;
}

static int get_info(struct fi_info **out, const struct pp_opts *o, int ctrl_fd)
{
	const char *domain = NULL;
	if (o->iface) {
		if (!if_nametoindex(o->iface)) {
			pp_err("no such interface '%s' in this network namespace", o->iface);
			return -1;
		}
		/* gamma takes its interface from FI_GAMMA_IFACE (DESIGN.md); the others
		 * name their domains after interfaces. */
		if (!strcmp(o->provider, "gamma")) {
			setenv("FI_GAMMA_IFACE", o->iface, 1);
		} else {
			domain = o->iface;
			if (!strcmp(o->provider, "tcp"))
				setenv("FI_TCP_IFACE", o->iface, 1);
		}
	}
	struct fi_info *hints = make_hints(o->provider, domain);
	if (o->auth_key) {
		/* fi_freeinfo frees it with the hints */
		hints->domain_attr->auth_key = (uint8_t *)strdup(o->auth_key);
		hints->domain_attr->auth_key_size = strlen(o->auth_key);
	}
	struct fi_info *list = NULL;
	int r = fi_getinfo(PP_FI_VERSION, NULL, NULL, 0, hints, &list);
	fi_freeinfo(hints);
	if (r) {
		explain_no_info(o, domain, r);
		return -1;
	}
	/* Socket providers list one fabric per address of the interface, the IPv6
	 * link-local one included: both sides must pick the same family, and IPv4
	 * is the one a control channel address names. */
	struct fi_info *chosen = list, *before = NULL;
	for (struct fi_info *i = list, *prev = NULL; i; prev = i, i = i->next)
		if (i->addr_format == FI_SOCKADDR_IN) {
			chosen = i;
			before = prev;
			break;
		}
	uint32_t ip = domain ? 0 : ctrl_local_ipv4(ctrl_fd);
	for (struct fi_info *i = list, *prev = NULL; i; prev = i, i = i->next)
		if (near_ctrl(i, ip)) {
			chosen = i;
			before = prev;
			break;
		}
	struct fi_info *rest = before ? list : chosen->next;
	if (before)
		before->next = chosen->next;
	chosen->next = NULL;
	fi_freeinfo(rest);
	/* Some providers fall back to another domain (e.g. lo) when the named one is
	 * not usable yet: a silent fallback would send the peer a useless address. */
	if (domain && strcmp(chosen->domain_attr->name, domain)) {
		pp_err("provider '%s' offers domain '%s' but not interface '%s' (is it up, with "
		       "carrier and an address?)",
		       o->provider, chosen->domain_attr->name, domain);
		fi_freeinfo(chosen);
		return -1;
	}
	*out = chosen;
	return 0;
}

static int check(int r, const char *what)
{
	if (r)
		pp_err("%s: %s", what, fi_strerror(-r));
	return r;
}

static int open_ep(struct pp_fab *f, int i, int tclass_high)
{
	struct fi_info *ei = fi_dupinfo(f->g.info);
	const char *what = "fi_dupinfo";
	int r = -FI_ENOMEM;
	if (ei) {
		ei->tx_attr->tclass = tclass_high ? FI_TC_LOW_LATENCY : FI_TC_BULK_DATA;
		r = gmf_ep(&f->g, ei, NULL, 0, &f->ep[i], &what);
		fi_freeinfo(ei);
	}
	if (f->ep[i])
		f->n_ep = i + 1;
	return check(r, what);
}

int pp_fab_open(struct pp_fab *f, const struct pp_opts *o, int n_ep, int tclass_high, int ctrl_fd)
{
	struct fi_info *info;
	const char *what = NULL;

	memset(f, 0, sizeof(*f));
	f->wait = o->wait;
	f->verbose = o->verbose;
	f->timeout_s = o->timeout_s;
	f->ctrl_fd = -1;
	if (get_info(&info, o, ctrl_fd))
		return -1;
	f->inject_size = info->tx_attr->inject_size;

	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
	                             .wait_obj = o->wait ? FI_WAIT_UNSPEC : FI_WAIT_NONE};
	struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC, .count = 4};
	if (check(gmf_open(&f->g, info, NULL, &cq_attr, &av_attr, &what), what))
		return -1;
	/* The second endpoint carries the bulk background: always low priority. */
	for (int i = 0; i < n_ep; i++)
		if (open_ep(f, i, i == 0 ? tclass_high : 0))
			return -1;
	return 0;
}

void pp_fab_close(struct pp_fab *f)
{
	for (int i = 0; i < f->n_ep; i++)
		fi_close(&f->ep[i]->fid);
	gmf_close(&f->g);
	memset(f, 0, sizeof(*f));
}

int pp_fab_names(struct pp_fab *f, void *buf, uint32_t *len)
{
	char *p = buf;
	uint32_t used = 0;
	for (int i = 0; i < f->n_ep; i++) {
		size_t n = PP_NAME_MAX;
		if (used + 4 + n > *len)
			return -1;
		if (check(fi_getname(&f->ep[i]->fid, p + used + 4, &n), "fi_getname"))
			return -1;
		uint32_t be = htonl(n);
		memcpy(p + used, &be, 4);
		used += 4 + n;
	}
	*len = used;
	return 0;
}

int pp_fab_insert_peer(struct pp_fab *f, const void *buf, uint32_t len)
{
	const char *p = buf;
	uint32_t off = 0;
	for (int i = 0; i < f->n_ep; i++) {
		uint32_t n;
		if (off + 4 > len)
			goto short_names;
		memcpy(&n, p + off, 4);
		n = ntohl(n);
		if (off + 4 + n > len)
			goto short_names;
		if (f->verbose) {
			char str[128];
			size_t sl = sizeof(str);
			fprintf(stderr, "peer endpoint %d: %s\n", i,
			        fi_av_straddr(f->g.av, p + off + 4, str, &sl));
		}
		int r = fi_av_insert(f->g.av, p + off + 4, 1, &f->peer[i], 0, NULL);
		if (r != 1) {
			pp_err("fi_av_insert of the peer's endpoint %d: %s", i,
			       fi_strerror(r < 0 ? -r : FI_EINVAL));
			return -1;
		}
		off += 4 + n;
	}
	return 0;
short_names:
	pp_err("peer sent fewer endpoint names than needed");
	return -1;
}

static int handle_error(struct pp_fab *f)
{
	struct fi_cq_err_entry e = {0};
	char buf[256];
	if (fi_cq_readerr(f->g.cq, &e, 0) < 0)
		return 0;
	struct pp_op *op = e.op_context;
	if (e.err == FI_ECANCELED && op) {
		op->err = e.err;
		op->done = 1;
		return 0;
	}
	pp_err("completion error: %s (provider says: %s)%s", fi_strerror(e.err),
	       fi_cq_strerror(f->g.cq, e.prov_errno, e.err_data, buf, sizeof(buf)),
	       e.err == FI_ETRUNC ? ": a message was longer than the posted buffer" : "");
	return -1;
}

static int read_cq(struct pp_fab *f, int timeout_ms)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n = f->wait && timeout_ms ? fi_cq_sread(f->g.cq, e, 16, NULL, timeout_ms)
	                                  : fi_cq_read(f->g.cq, e, 16);
	if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT)
		return 0;
	if (n == -FI_EAVAIL)
		return handle_error(f);
	if (n < 0) {
		pp_err("fi_cq_read: %s", fi_strerror(-n));
		return -1;
	}
	for (ssize_t i = 0; i < n; i++) {
		struct pp_op *op = e[i].op_context;
		if (!op)
			continue;
		op->len = e[i].len;
		op->tag = e[i].tag;
		op->done = 1;
	}
	return 0;
}

int pp_progress(struct pp_fab *f)
{
	return read_cq(f, 0);
}

static int give_up(struct pp_fab *f, double deadline, unsigned long turn, const char *what)
{
	/* Clock and socket checks cost more than a CQ poll: do them now and then. */
	if (!f->wait && turn % 1024)
		return 0;
	if (pp_now() > deadline) {
		pp_err("timed out after %g s waiting for %s (--timeout)", f->timeout_s, what);
		return -1;
	}
	return f->ctrl_fd >= 0 ? pp_ctrl_peer_alive(f->ctrl_fd) : 0;
}

int pp_wait(struct pp_fab *f, struct pp_op **ops, int n, const char *what)
{
	double deadline = pp_now() + f->timeout_s;
	for (unsigned long turn = 1;; turn++) {
		int i = 0;
		while (i < n && ops[i]->done)
			i++;
		if (i == n)
			return 0;
		if (read_cq(f, f->pump ? 1 : 100))
			return -1;
		if (f->pump && f->pump(f->pump_arg))
			return -1;
		if (give_up(f, deadline, turn, what))
			return -1;
	}
}

int pp_wait1(struct pp_fab *f, struct pp_op *op, const char *what)
{
	return pp_wait(f, &op, 1, what);
}

static int retry(struct pp_fab *f, double deadline, unsigned long turn, const char *what)
{
	if (read_cq(f, 0))
		return -1;
	return give_up(f, deadline, turn, what);
}

int pp_recv(struct pp_fab *f, int ep, void *buf, size_t len, uint64_t tag, struct pp_op *op)
{
	double deadline = pp_now() + f->timeout_s;
	op->done = op->err = 0;
	for (unsigned long turn = 1;; turn++) {
		ssize_t r = fi_trecv(f->ep[ep], buf, len, NULL, FI_ADDR_UNSPEC, tag, 0, op);
		if (r == 0)
			return 0;
		if (r != -FI_EAGAIN)
			return check(r, "fi_trecv");
		if (retry(f, deadline, turn, "room to post a receive"))
			return -1;
	}
}

int pp_send(struct pp_fab *f, int ep, const void *buf, size_t len, uint64_t tag, struct pp_op *op)
{
	double deadline = pp_now() + f->timeout_s;
	bool inject = len <= f->inject_size;
	if (op)
		op->done = op->err = 0;
	for (unsigned long turn = 1;; turn++) {
		ssize_t r = inject ? fi_tinject(f->ep[ep], buf, len, f->peer[ep], tag)
		                   : fi_tsend(f->ep[ep], buf, len, NULL, f->peer[ep], tag, op);
		if (r == 0) {
			if (inject && op)
				op->done = 1;
			return 0;
		}
		if (r != -FI_EAGAIN)
			return check(r, inject ? "fi_tinject" : "fi_tsend");
		if (retry(f, deadline, turn, "room to send"))
			return -1;
	}
}

int pp_cancel(struct pp_fab *f, int ep, struct pp_op *op)
{
	if (op->done)
		return 0;
	return check(fi_cancel(&f->ep[ep]->fid, op), "fi_cancel");
}
