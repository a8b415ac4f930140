/*
 * gamma-pingpong: latency, bandwidth and message rate between two processes
 * over any libfabric provider (gamma by default), through the public API only.
 * A TCP control channel carries the plan, the endpoint names and verdicts;
 * every measured byte goes through libfabric and is verified on arrival.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ctrl.h"
#include "report.h"

static int exchange_names(struct pp_fab *f, int fd, double timeout_s)
{
	char mine[PP_MAX_EP * (PP_NAME_MAX + 4)], theirs[sizeof(mine)];
	uint32_t len = sizeof(mine), tlen = sizeof(theirs);
	if (pp_fab_names(f, mine, &len) || pp_ctrl_send(fd, PP_MSG_ADDR, mine, len) ||
	    pp_ctrl_recv(fd, PP_MSG_ADDR, theirs, &tlen, pp_now() + timeout_s))
		return -1;
	return pp_fab_insert_peer(f, theirs, tlen);
}

static int run_lat(struct pp_bench *b, int fd)
{
	const struct pp_plan *p = b->p;
	bool csv = b->o->csv;
	double v[p->reps];
	if (pp_ctrl_sync(fd, b->o->timeout_s))
		return -1;
	if (!b->server)
		pp_report_header(csv,
		                 "half round-trip latency: median round trip, median over reps",
		                 "      size    latency_us");
	for (uint32_t s = 0; s < p->n_sizes; s++) {
		for (uint32_t r = 0; r < p->reps; r++) {
			if (pp_lat(b, p->sizes[s], &v[r]))
				return -1;
			if (b->o->verbose && !b->server)
				pp_report_note(csv, "latency %u B rep %u: %.2f us", p->sizes[s], r,
				               v[r]);
		}
		if (!b->server)
			pp_report_row(csv, "latency", p->sizes[s], pp_median(v, p->reps), "us");
	}
	return 0;
}

static int run_bw(struct pp_bench *b, int fd, bool rate)
{
	const struct pp_plan *p = b->p;
	bool csv = b->o->csv;
	double v[p->reps];
	uint32_t n = rate ? 1 : p->n_bw_sizes;
	if (pp_ctrl_sync(fd, b->o->timeout_s))
		return -1;
	if (!b->server && rate)
		pp_report_header(csv, "message rate, median", "      size         msg/s");
	else if (!b->server)
		pp_report_header(csv, "streaming bandwidth (MB = 10^6 bytes), median",
		                 "      size          MB/s");
	for (uint32_t s = 0; s < n; s++) {
		uint32_t size = rate ? 8 : p->bw_sizes[s];
		uint32_t window = rate ? p->window : pp_bw_window(p, size);
		uint32_t windows = rate ? p->rate_iters : p->bw_iters;
		for (uint32_t r = 0; r < p->reps; r++) {
			if (pp_bw(b, size, window, windows, &v[r]))
				return -1;
			if (!rate)
				v[r] = v[r] * size / 1e6;
			if (b->o->verbose && !b->server)
				pp_report_note(csv, "%s %u B window %u rep %u: %.2f",
				               rate ? "rate" : "bandwidth", size, window, r, v[r]);
		}
		if (!b->server)
			pp_report_row(csv, rate ? "msgrate" : "bandwidth", size,
			              pp_median(v, p->reps), rate ? "msg/s" : "MB/s");
	}
	return 0;
}

static int run_bg(struct pp_bench *b, int fd)
{
	const struct pp_plan *p = b->p;
	bool csv = b->o->csv;
	double quiet[p->reps], loaded[p->reps], bg[p->reps];
	if (pp_ctrl_sync(fd, b->o->timeout_s))
		return -1;
	/* Quiet and loaded alternate, so slow drifts of a shared machine hit both. */
	for (uint32_t r = 0; r < p->reps; r++) {
		if (pp_lat(b, 8, &quiet[r]) || pp_lat_loaded(b, &loaded[r], &bg[r]))
			return -1;
		if (b->o->verbose && !b->server)
			pp_report_note(csv, "8 B latency rep %u: quiet %.2f us, loaded %.2f us", r,
			               quiet[r], loaded[r]);
	}
	if (b->server)
		return 0;
	pp_report_header(csv,
	                 "8 B latency (tclass of --tclass) beside a bulk stream on a second "
	                 "endpoint (tclass low), median",
	                 "      size    latency_us");
	pp_report_row(csv, "latency_quiet", 8, pp_median(quiet, p->reps), "us");
	pp_report_row(csv, "latency_loaded", 8, pp_median(loaded, p->reps), "us");
	pp_report_row(csv, "bg_bandwidth", p->bg_size, pp_median(bg, p->reps), "MB/s");
	if (!csv)
		printf("(rows: quiet latency, latency with background, background MB/s)\n");
	return 0;
}

static int run(struct pp_opts *o, struct pp_fab *f, int *fdp)
{
	struct pp_plan *p = &o->plan;
	int fd = -1;
	if (o->server) {
		fd = *fdp = pp_ctrl_accept(o->port, pp_now() + o->accept_timeout_s);
		if (fd < 0 || pp_plan_recv(fd, p, pp_now() + o->timeout_s))
			return -1;
		if (o->provider_given && strcmp(o->provider, p->provider)) {
			pp_err(
			    "the client asks for provider '%s', this server was started with '%s'",
			    p->provider, o->provider);
			return -1;
		}
		o->provider = p->provider;
	}
	if (!o->server) {
		fd = *fdp = pp_ctrl_connect(o->peer, o->port, pp_now() + o->timeout_s);
		if (fd < 0 || pp_plan_send(fd, p))
			return -1;
	}
	int n_ep = p->tests & PP_TEST_BG ? 2 : 1;
	if (pp_fab_open(f, o, n_ep, p->tclass_high, fd))
		return -1;
	f->ctrl_fd = fd;
	if (exchange_names(f, fd, o->timeout_s))
		return -1;

	struct pp_bench b;
	int r = pp_bench_init(&b, f, o);
	if (!r)
		r = pp_connect_warmup(&b);
	if (!r && !o->server) {
		struct fi_info *i = f->g.info;
		pp_report_note(o->csv,
		               "gamma-pingpong: provider %s, domain %s, tclass %s, inject %zu B, "
		               "reps %u, iters %u, warmup %u, %s, set-up round trips %u",
		               i->fabric_attr->prov_name, i->domain_attr->name,
		               p->tclass_high ? "high" : "low", f->inject_size, p->reps, p->iters,
		               p->warmup, o->wait ? "blocking waits" : "busy polling",
		               PP_SETUP_ROUND_TRIPS);
		if (o->csv)
			printf("test,size,value,unit\n");
	}
	if (!r && (p->tests & PP_TEST_LAT))
		r = run_lat(&b, fd);
	if (!r && (p->tests & PP_TEST_BW))
		r = run_bw(&b, fd, false);
	if (!r && (p->tests & PP_TEST_RATE))
		r = run_bw(&b, fd, true);
	if (!r && (p->tests & PP_TEST_BG))
		r = run_bg(&b, fd);

	if (!r && o->server && p->corrupt && !b.corrupted) {
		pp_err("--selftest-corrupt found no non-empty message to corrupt");
		r = -1;
	}

	/* The verdict: what each side received and checked, byte for byte. */
	struct pp_verdict v = {htobe64(b.verified_msgs), htobe64(b.verified_bytes)};
	uint32_t len = sizeof(v);
	if (!r && o->server) {
		r = pp_ctrl_send(fd, PP_MSG_VERDICT, &v, len);
		if (!r)
			printf("gamma-pingpong server: verified every byte of %" PRIu64
			       " messages (%" PRIu64 " bytes) received\n",
			       b.verified_msgs, b.verified_bytes);
	} else if (!r) {
		r = pp_ctrl_recv(fd, PP_MSG_VERDICT, &v, &len, pp_now() + o->timeout_s);
		if (!r)
			pp_report_note(o->csv,
			               "verified: every byte of %" PRIu64 " messages (%" PRIu64
			               " bytes) at the server and %" PRIu64 " messages (%" PRIu64
			               " bytes) at the client",
			               be64toh(v.messages), be64toh(v.bytes), b.verified_msgs,
			               b.verified_bytes);
	}
	pp_bench_fini(&b);
	return r;
}

int main(int argc, char **argv)
{
	struct pp_opts o;
	struct pp_fab f = {0};
	int fd = -1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pp_parse_opts(argc, argv, &o))
		return 1;
	int r = run(&o, &f, &fd);
	if (r && fd >= 0)
		pp_ctrl_fail(fd, "%s", pp_last_error);
	pp_fab_close(&f);
	if (r)
		return pp_corruption_seen ? 3 : 1;
	return 0;
}
