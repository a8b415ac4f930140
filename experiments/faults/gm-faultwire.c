/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm-faultwire: a faulty Ethernet wire in userspace.
 *
 *   gm-faultwire [options] IF1 IF2
 *
 * Why this exists: the kernel on the project's machines has no sch_netem (and
 * no prio qdisc), so `tc qdisc add ... netem` fails with "Specified qdisc kind
 * is unknown".  Tests still need to run the gamma transport over a lossy,
 * reordering, duplicating, corrupting, slow or flapping link.  This relay
 * provides that link:
 *
 *   node A iface ── veth ── IF1 [gm-faultwire] IF2 ── veth ── node B iface
 *
 * It reads every frame arriving on IF1 and IF2 from AF_PACKET sockets and
 * transmits it, byte for byte, on the other interface.  The frames are real
 * Ethernet frames that cross real veth pairs; only the decision to lose,
 * duplicate, flip a bit in, hold back or delay a frame is made here, with a
 * seeded PRNG (the same sequence of frames meets the same faults).  Faults
 * apply only to one EtherType (gamma's 0x88B5 by default); every other frame
 * passes untouched and at once.  Both interfaces are put in promiscuous mode,
 * since the frames are addressed to the far end.  Frames are copied as
 * received, so IP traffic whose checksum the sending kernel left to offload
 * may arrive with a bad checksum; gamma frames are not affected.
 *
 * On SIGTERM or SIGINT it prints one line of counters per direction and
 * exits 0: received, forwarded (sent on, including duplicates), untouched
 * (other EtherTypes, or the fault-free direction), lost, down (dropped while
 * the link was down), duplicated, corrupted, reordered, delayed, oversize
 * (truncated on receipt, dropped), send_errors, pending (still queued at exit)
 * and overrun (dropped by the kernel because the relay fell behind).
 * It prints "gm-faultwire: ready" on stdout once both sockets are bound, so a
 * script can wait for it before sending.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ETH_HDR 14
#define BATCH   64
/* A held-back frame waits for a few later frames, but never longer than this:
 * otherwise the last frame of a burst would sit in the relay until the next
 * burst, which is a loss plus an unbounded delay, not a reordering. */
#define HOLD_MAX_NS (10 * 1000 * 1000ULL)
#define NSEC        1000000000ULL

struct faults {
	double loss, duplicate, corrupt, reorder; /* probabilities, 0..1 */
	uint64_t delay_ns, jitter_ns;
	int64_t down_after_ns, down_for_ns; /* down_for 0: never down */
	int ethertype;                      /* -1: every frame */
};

struct counters {
	unsigned long long received, forwarded, untouched, lost, down, duplicated, corrupted,
	    reordered, delayed, oversize, send_errors;
};

struct slot {
	uint64_t due;   /* release time from the delay queue, ns */
	uint64_t order; /* ties in due keep arrival order */
	uint32_t len;
	uint8_t *buf;
};

/* One direction of the wire: frames read from in_fd leave on out_fd. */
struct dir {
	const char *name;
	int in_fd, out_fd, out_ifindex;
	bool faulty; /* faults apply in this direction */
	uint64_t rng;
	struct slot *slots;
	uint8_t *mem;
	uint32_t *free_ids, nfree;
	uint32_t *heap, nheap; /* delay queue: min-heap on (due, order) */
	uint64_t next_order;
	int64_t held; /* slot held back for reordering, -1: none */
	unsigned held_left;
	uint64_t held_since;
	uint32_t out[2 * BATCH + 2]; /* slots to transmit */
	unsigned nout;
	struct counters c;
};

static struct faults F = {.ethertype = 0x88B5};
static uint32_t bufsz, nslots;
static int64_t first_fault_frame = -1; /* time the down window counts from */
static int link_state_printed;         /* 0 up, 1 down announced, 2 up again announced */
static volatile sig_atomic_t stop;

static void die(const char *what)
{
	fprintf(stderr, "gm-faultwire: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: gm-faultwire [options] IF1 IF2\n"
	        "Forwards every Ethernet frame between IF1 and IF2 (both directions), applying\n"
	        "faults to frames of one EtherType:\n"
	        "  --loss P          drop P percent of frames\n"
	        "  --duplicate P     send P percent of frames twice\n"
	        "  --corrupt P       flip one random bit after the Ethernet header in P percent\n"
	        "  --reorder P       hold P percent of frames back until 1-3 later frames (at\n"
	        "                    most 10 ms) have passed\n"
	        "  --delay US        delay every frame by US microseconds\n"
	        "  --jitter US       plus or minus up to US microseconds (uniform); reorders\n"
	        "  --down-after MS   MS milliseconds after the first faulted frame, the link goes\n"
	        "  --down-for MS     down for MS milliseconds (all faulted frames dropped)\n"
	        "  --ethertype T     EtherType the faults apply to (default 0x88B5; 'all')\n"
	        "  --direction D     both (default), 1to2 or 2to1: where faults apply\n"
	        "  --seed N          PRNG seed (default 1)\n"
	        "  --limit N         frames the delay queue holds per direction (default: 16 MiB\n"
	        "                    worth); when full, reading pauses\n"
	        "Counters are printed on SIGTERM/SIGINT.\n");
	exit(2);
}

static double parse_percent(const char *s, const char *opt)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *s == '\0' || (*end != '\0' && strcmp(end, "%") != 0) ||
	    !(v >= 0 && v <= 100)) {
		fprintf(stderr, "gm-faultwire: %s wants a percentage 0..100, not '%s'\n", opt, s);
		exit(2);
	}
	return v / 100.0;
}

static unsigned long long parse_uint(const char *s, const char *opt, unsigned long long max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *s == '\0' || *s == '-' || *end != '\0' || v > max) {
		fprintf(stderr, "gm-faultwire: %s wants a number 0..%llu, not '%s'\n", opt, max, s);
		exit(2);
	}
	return v;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* splitmix64: tiny, well mixed, and the sequence depends only on the seed. */
static uint64_t rnd(struct dir *d)
{
	uint64_t z = (d->rng += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static bool chance(struct dir *d, double p)
{
	return p > 0 && (double)(rnd(d) >> 11) * 0x1.0p-53 < p;
}

/* ---- slot pool and delay queue ---- */

static uint32_t slot_get(struct dir *d)
{
	return d->free_ids[--d->nfree];
}

static void slot_put(struct dir *d, uint32_t id)
{
	d->free_ids[d->nfree++] = id;
}

static bool heap_less(struct dir *d, uint32_t a, uint32_t b)
{
	struct slot *x = &d->slots[d->heap[a]], *y = &d->slots[d->heap[b]];
	return x->due < y->due || (x->due == y->due && x->order < y->order);
}

static void heap_swap(struct dir *d, uint32_t a, uint32_t b)
{
	uint32_t t = d->heap[a];
	d->heap[a] = d->heap[b];
	d->heap[b] = t;
}

static void heap_push(struct dir *d, uint32_t id)
{
	uint32_t i = d->nheap++;
	d->heap[i] = id;
	while (i > 0 && heap_less(d, i, (i - 1) / 2)) {
		heap_swap(d, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static uint32_t heap_pop(struct dir *d)
{
	uint32_t top = d->heap[0], i = 0;
	d->heap[0] = d->heap[--d->nheap];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < d->nheap && heap_less(d, l, m))
			m = l;
		if (r < d->nheap && heap_less(d, r, m))
			m = r;
		if (m == i)
			break;
		heap_swap(d, i, m);
		i = m;
	}
	return top;
}

/* ---- transmission ---- */

static void flush(struct dir *d)
{
	struct mmsghdr msgs[2 * BATCH + 2];
	struct iovec iov[2 * BATCH + 2];
	struct sockaddr_ll to[2 * BATCH + 2];
	unsigned done = 0;

	for (unsigned i = 0; i < d->nout; i++) {
		struct slot *s = &d->slots[d->out[i]];
		iov[i] = (struct iovec){.iov_base = s->buf, .iov_len = s->len};
		/* The frame's own EtherType as the protocol, so that the kernel
		 * sets skb->protocol as for any sender of that type. */
		to[i] =
		    (struct sockaddr_ll){.sll_family = AF_PACKET, .sll_ifindex = d->out_ifindex};
		memcpy(&to[i].sll_protocol, s->buf + 12, 2);
		msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &to[i],
		                                       .msg_namelen = sizeof(to[i]),
		                                       .msg_iov = &iov[i],
		                                       .msg_iovlen = 1}};
	}
	while (done < d->nout) {
		int n = sendmmsg(d->out_fd, msgs + done, d->nout - done, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* This message cannot go (too long for the MTU, interface
			 * down...): count it, and carry on with the rest. */
			d->c.send_errors++;
			done++;
			continue;
		}
		d->c.forwarded += (unsigned)n;
		done += (unsigned)n;
	}
	for (unsigned i = 0; i < d->nout; i++)
		slot_put(d, d->out[i]);
	d->nout = 0;
}

static void push_out(struct dir *d, uint32_t id)
{
	d->out[d->nout++] = id;
	if (d->nout >= 2 * BATCH)
		flush(d);
}

/* The last stage of a faulted frame: maybe hold it back behind later ones. */
static void emit(struct dir *d, uint32_t id, uint64_t now)
{
	if (d->held < 0 && chance(d, F.reorder)) {
		d->held = id;
		d->held_left = 1 + (unsigned)(rnd(d) % 3);
		d->held_since = now;
		return;
	}
	push_out(d, id);
	if (d->held >= 0 && --d->held_left == 0) {
		push_out(d, (uint32_t)d->held);
		d->held = -1;
		d->c.reordered++;
	}
}

/* Release what is due: delayed frames, and a frame held back too long. */
static void release(struct dir *d, uint64_t now)
{
	while (d->nheap > 0 && d->slots[d->heap[0]].due <= now)
		emit(d, heap_pop(d), now);
	if (d->held >= 0 && now - d->held_since >= HOLD_MAX_NS) {
		/* Nothing overtook it: it leaves late, in order. */
		push_out(d, (uint32_t)d->held);
		d->held = -1;
	}
}

/* Nanoseconds until release() has work for this direction (UINT64_MAX: none). */
static uint64_t next_event(struct dir *d, uint64_t now)
{
	uint64_t t = UINT64_MAX;
	if (d->nheap > 0)
		t = d->slots[d->heap[0]].due;
	if (d->held >= 0 && d->held_since + HOLD_MAX_NS < t)
		t = d->held_since + HOLD_MAX_NS;
	return t == UINT64_MAX ? t : (t > now ? t - now : 0);
}

/* ---- the fault pipeline ---- */

static bool link_down(uint64_t now)
{
	if (F.down_for_ns == 0)
		return false;
	if (first_fault_frame < 0)
		first_fault_frame = (int64_t)now;
	int64_t t = (int64_t)now - first_fault_frame;
	bool down = t >= F.down_after_ns && t < F.down_after_ns + F.down_for_ns;
	if (down && link_state_printed == 0) {
		fprintf(stderr, "gm-faultwire: link down at %.3f s\n", t / 1e9);
		link_state_printed = 1;
	} else if (!down && link_state_printed == 1) {
		fprintf(stderr, "gm-faultwire: link up again at %.3f s\n", t / 1e9);
		link_state_printed = 2;
	}
	return down;
}

/* One copy of a frame after loss: corrupt it, then delay or emit it. */
static void schedule(struct dir *d, uint32_t id, uint64_t now)
{
	struct slot *s = &d->slots[id];
	if (s->len > ETH_HDR && chance(d, F.corrupt)) {
		uint64_t bit = rnd(d) % ((uint64_t)(s->len - ETH_HDR) * 8);
		s->buf[ETH_HDR + bit / 8] ^= (uint8_t)(1u << (bit % 8));
		d->c.corrupted++;
	}
	if (F.delay_ns == 0 && F.jitter_ns == 0) {
		emit(d, id, now);
		return;
	}
	int64_t delay = (int64_t)F.delay_ns;
	if (F.jitter_ns)
		delay += (int64_t)(rnd(d) % (2 * F.jitter_ns + 1)) - (int64_t)F.jitter_ns;
	s->due = now + (uint64_t)(delay > 0 ? delay : 0);
	s->order = d->next_order++;
	d->c.delayed++;
	heap_push(d, id);
}

static void handle(struct dir *d, uint32_t id, uint64_t now)
{
	struct slot *s = &d->slots[id];
	int type = s->len >= ETH_HDR ? s->buf[12] << 8 | s->buf[13] : -2;
	if (!d->faulty || (F.ethertype >= 0 && type != F.ethertype)) {
		d->c.untouched++;
		push_out(d, id);
		return;
	}
	if (link_down(now)) {
		d->c.down++;
		slot_put(d, id);
		return;
	}
	if (chance(d, F.loss)) {
		d->c.lost++;
		slot_put(d, id);
		return;
	}
	if (chance(d, F.duplicate) && d->nfree > 0) {
		uint32_t copy = slot_get(d);
		memcpy(d->slots[copy].buf, s->buf, s->len);
		d->slots[copy].len = s->len;
		d->c.duplicated++;
		schedule(d, id, now);
		schedule(d, copy, now);
		return;
	}
	schedule(d, id, now);
}

/* Read one batch; returns frames read (0 when none are waiting). */
static int receive(struct dir *d)
{
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_ll from[BATCH];
	uint32_t ids[BATCH];
	/* Keep one slot per frame for a duplicate, and room in the output batch. */
	unsigned want = d->nfree / 2;
	if (want > BATCH)
		want = BATCH;
	if (want == 0)
		return 0;
	for (unsigned i = 0; i < want; i++) {
		ids[i] = slot_get(d);
		iov[i] = (struct iovec){.iov_base = d->slots[ids[i]].buf, .iov_len = bufsz};
		msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &from[i],
		                                       .msg_namelen = sizeof(from[i]),
		                                       .msg_iov = &iov[i],
		                                       .msg_iovlen = 1}};
	}
	int n = recvmmsg(d->in_fd, msgs, want, MSG_DONTWAIT, NULL);
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		die("recvmmsg");
	if (n < 0)
		n = 0;
	uint64_t now = now_ns();
	for (int i = 0; i < n; i++) {
		struct slot *s = &d->slots[ids[i]];
		s->len = msgs[i].msg_len;
		if (from[i].sll_pkttype == PACKET_OUTGOING) {
			slot_put(d, ids[i]); /* our own transmission (if the kernel lacks
			                        IGNORE_OUTGOING) */
			continue;
		}
		d->c.received++;
		if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			d->c.oversize++; /* larger than any MTU we were set up for */
			slot_put(d, ids[i]);
			continue;
		}
		handle(d, ids[i], now);
	}
	for (unsigned i = (unsigned)n; i < want; i++)
		slot_put(d, ids[i]);
	return n;
}

/* ---- setup ---- */

static int open_iface(const char *ifname, int *ifindex, unsigned *mtu)
{
	/* Protocol 0 until bound: an unbound ETH_P_ALL socket would briefly
	 * see frames of every interface. */
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		die("socket(AF_PACKET) (needs root or CAP_NET_RAW)");
	*ifindex = (int)if_nametoindex(ifname);
	if (*ifindex == 0) {
		fprintf(stderr, "gm-faultwire: no interface '%s'\n", ifname);
		exit(2);
	}
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
		die("SIOCGIFMTU");
	*mtu = (unsigned)ifr.ifr_mtu;
	int one = 1;
	/* Without it, each frame we send would come back to us as outgoing. */
	if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0)
		die("setsockopt(PACKET_IGNORE_OUTGOING)");
	/* Room for bursts while the other direction is being served. */
	int buf = 32 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	buf = 8 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = *ifindex};
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("bind");
	/* The frames are addressed to the far end's MAC, not to this
	 * interface: without promiscuous mode they would not all reach us. */
	struct packet_mreq mr = {.mr_ifindex = *ifindex, .mr_type = PACKET_MR_PROMISC};
	if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0)
		die("setsockopt(PACKET_ADD_MEMBERSHIP, PROMISC)");
	return fd;
}

static void dir_init(struct dir *d, const char *name, int in_fd, int out_fd, int out_ifindex,
                     bool faulty, uint64_t seed)
{
	*d = (struct dir){.name = name,
	                  .in_fd = in_fd,
	                  .out_fd = out_fd,
	                  .out_ifindex = out_ifindex,
	                  .faulty = faulty,
	                  .rng = seed,
	                  .held = -1};
	d->slots = calloc(nslots, sizeof(*d->slots));
	d->mem = malloc((size_t)nslots * bufsz);
	d->free_ids = malloc(nslots * sizeof(*d->free_ids));
	d->heap = malloc(nslots * sizeof(*d->heap));
	if (!d->slots || !d->mem || !d->free_ids || !d->heap)
		die("malloc");
	for (uint32_t i = 0; i < nslots; i++) {
		d->slots[i].buf = d->mem + (size_t)i * bufsz;
		d->free_ids[d->nfree++] = nslots - 1 - i;
	}
}

static void dir_report(struct dir *d)
{
	struct counters *c = &d->c;
	/* Frames the kernel dropped because this relay fell behind. */
	struct tpacket_stats st = {0};
	socklen_t sl = sizeof(st);
	if (getsockopt(d->in_fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl) < 0)
		st.tp_drops = 0;
	printf("gm-faultwire: %s received=%llu forwarded=%llu untouched=%llu lost=%llu down=%llu "
	       "duplicated=%llu corrupted=%llu reordered=%llu delayed=%llu oversize=%llu "
	       "send_errors=%llu pending=%u overrun=%u\n",
	       d->name, c->received, c->forwarded, c->untouched, c->lost, c->down, c->duplicated,
	       c->corrupted, c->reordered, c->delayed, c->oversize, c->send_errors,
	       d->nheap + (d->held >= 0) + d->nout, st.tp_drops);
}

static void dir_free(struct dir *d)
{
	free(d->slots);
	free(d->mem);
	free(d->free_ids);
	free(d->heap);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"loss", required_argument, NULL, 'l'},
	                                     {"duplicate", required_argument, NULL, 'u'},
	                                     {"corrupt", required_argument, NULL, 'c'},
	                                     {"reorder", required_argument, NULL, 'r'},
	                                     {"delay", required_argument, NULL, 'd'},
	                                     {"jitter", required_argument, NULL, 'j'},
	                                     {"down-after", required_argument, NULL, 'a'},
	                                     {"down-for", required_argument, NULL, 'f'},
	                                     {"ethertype", required_argument, NULL, 'e'},
	                                     {"direction", required_argument, NULL, 'D'},
	                                     {"seed", required_argument, NULL, 's'},
	                                     {"limit", required_argument, NULL, 'L'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	unsigned long long seed = 1, limit = 0;
	bool fault12 = true, fault21 = true;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			F.loss = parse_percent(optarg, "--loss");
			break;
		case 'u':
			F.duplicate = parse_percent(optarg, "--duplicate");
			break;
		case 'c':
			F.corrupt = parse_percent(optarg, "--corrupt");
			break;
		case 'r':
			F.reorder = parse_percent(optarg, "--reorder");
			break;
		case 'd':
			F.delay_ns = parse_uint(optarg, "--delay", 60000000) * 1000;
			break;
		case 'j':
			F.jitter_ns = parse_uint(optarg, "--jitter", 60000000) * 1000;
			break;
		case 'a':
			F.down_after_ns =
			    (int64_t)parse_uint(optarg, "--down-after", 3600000) * 1000000;
			break;
		case 'f':
			F.down_for_ns =
			    (int64_t)parse_uint(optarg, "--down-for", 3600000) * 1000000;
			break;
		case 'e':
			F.ethertype = strcmp(optarg, "all") == 0
			                  ? -1
			                  : (int)parse_uint(optarg, "--ethertype", 0xffff);
			break;
		case 'D':
			if (strcmp(optarg, "both") == 0) {
				fault12 = fault21 = true;
			} else if (strcmp(optarg, "1to2") == 0) {
				fault12 = true;
				fault21 = false;
			} else if (strcmp(optarg, "2to1") == 0) {
				fault12 = false;
				fault21 = true;
			} else {
				fprintf(stderr,
				        "gm-faultwire: --direction wants both, 1to2 or 2to1\n");
				return 2;
			}
			break;
		case 's':
			seed = parse_uint(optarg, "--seed", UINT64_MAX);
			break;
		case 'L':
			limit = parse_uint(optarg, "--limit", 1 << 20);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	if (F.down_after_ns && !F.down_for_ns) {
		fprintf(stderr, "gm-faultwire: --down-after needs --down-for\n");
		return 2;
	}
	if (strcmp(argv[optind], argv[optind + 1]) == 0) {
		fprintf(stderr, "gm-faultwire: IF1 and IF2 must differ\n");
		return 2;
	}

	int if1, if2;
	unsigned mtu1, mtu2;
	int fd1 = open_iface(argv[optind], &if1, &mtu1);
	int fd2 = open_iface(argv[optind + 1], &if2, &mtu2);
	/* Header, a VLAN tag, and slack; larger frames are counted as oversize. */
	bufsz = ((mtu1 > mtu2 ? mtu1 : mtu2) + ETH_HDR + 4 + 63) & ~63u;
	nslots = limit ? (uint32_t)limit : (16u << 20) / bufsz;
	if (nslots < 4 * BATCH)
		nslots = 4 * BATCH;

	/* Signals stay blocked except inside ppoll(): no wake-up is lost. */
	sigset_t block, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	static struct dir d[2];
	char name12[2 * IF_NAMESIZE + 4], name21[2 * IF_NAMESIZE + 4];
	snprintf(name12, sizeof(name12), "%s->%s", argv[optind], argv[optind + 1]);
	snprintf(name21, sizeof(name21), "%s->%s", argv[optind + 1], argv[optind]);
	dir_init(&d[0], name12, fd1, fd2, if2, fault12, seed * 2 + 1);
	dir_init(&d[1], name21, fd2, fd1, if1, fault21, seed * 2 + 2);

	printf("gm-faultwire: ready %s <-> %s\n", argv[optind], argv[optind + 1]);
	fflush(stdout);

	while (!stop) {
		uint64_t now = now_ns(), wait = UINT64_MAX;
		struct pollfd pfd[2];
		for (int i = 0; i < 2; i++) {
			release(&d[i], now);
			flush(&d[i]);
			uint64_t t = next_event(&d[i], now);
			if (t < wait)
				wait = t;
			/* A full delay queue stops reading: the socket buffer
			 * absorbs the rest, as a NIC ring would. */
			pfd[i] = (struct pollfd){.fd = d[i].in_fd,
			                         .events = d[i].nfree >= 2 ? POLLIN : 0};
		}
		struct timespec ts = {.tv_sec = (time_t)(wait / NSEC),
		                      .tv_nsec = (long)(wait % NSEC)};
		int r = ppoll(pfd, 2, wait == UINT64_MAX ? NULL : &ts, &waitmask);
		if (r < 0 && errno != EINTR)
			die("ppoll");
		if (r <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (pfd[i].revents & (POLLERR | POLLNVAL)) {
				fprintf(stderr, "gm-faultwire: error on %s\n", argv[optind + i]);
				stop = 1;
			}
			if (!(pfd[i].revents & POLLIN))
				continue;
			/* A few batches, then serve the other direction too. */
			for (int b = 0; b < 4 && receive(&d[i]) == BATCH; b++)
				flush(&d[i]);
			flush(&d[i]);
		}
	}

	dir_report(&d[0]);
	dir_report(&d[1]);
	for (int i = 0; i < 2; i++)
		dir_free(&d[i]);
	close(fd1);
	close(fd2);
	return 0;
}
