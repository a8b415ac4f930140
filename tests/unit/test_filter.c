/*
 * The receive socket's kernel filter (gm_filter.h) against crafted frames:
 * the provider's own, and the one gamma-rawd locks on the sockets it hands
 * out (rawd/rawd_filter.c).  A small interpreter of the classic BPF they
 * use runs every case, each kind of packet (to us, outgoing, broadcast, to
 * another host, from another interface); the kernel runs the PACKET_HOST
 * cases too, through a socket filter on an AF_UNIX datagram socket (its
 * packets are PACKET_HOST of no interface, data at offset 0), and must
 * agree.  No privilege needed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gm_filter.h"
#include "gm_wire.h"
#include "rawd.h"

#define ET   0x88B5
#define IFX  7      /* gamma-rawd's interface */
#define KEEP 0xffff /* what the provider's filter keeps of a frame */

static const uint8_t us[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
static const uint8_t other[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x56};

struct frame {
	uint8_t b[GM_ETH_HLEN + sizeof(struct gm_hdr)];
	size_t len;
};

static struct frame frame(const uint8_t dst[6], uint16_t ethertype, uint16_t dst_port)
{
	struct frame f = {.len = sizeof(f.b)};

	gm_eth_encode(f.b, dst, other, ethertype);
	gm_hdr_encode(f.b + GM_ETH_HLEN, &(struct gm_hdr){.version = GM_WIRE_VERSION,
	                                                  .type = GM_FT_EAGER,
	                                                  .dst_port = dst_port,
	                                                  .src_port = 9});
	return f;
}

/* What the kernel does for the instructions gm_filter emits; anything else fails. */
static uint32_t run(const struct sock_filter *f, unsigned n, const struct frame *fr, int pkttype,
                    int ifindex)
{
	uint32_t a = 0;

	for (unsigned pc = 0; pc < n; pc++) {
		const struct sock_filter *s = &f[pc];

		switch (s->code) {
		case BPF_LD | BPF_W | BPF_ABS:
		case BPF_LD | BPF_H | BPF_ABS:
		case BPF_LD | BPF_B | BPF_ABS: {
			unsigned size = BPF_SIZE(s->code) == BPF_W   ? 4
			                : BPF_SIZE(s->code) == BPF_H ? 2
			                                             : 1;

			if (s->k == (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE)) {
				a = (uint32_t)pkttype;
				break;
			}
			if (s->k == (uint32_t)(SKF_AD_OFF + SKF_AD_IFINDEX)) {
				if (!ifindex)
					return 0; /* the kernel's answer for no device */
				a = (uint32_t)ifindex;
				break;
			}
			cr_assert_lt(s->k, (uint32_t)SKF_AD_OFF,
			             "instruction %u: ancillary load %#x", pc, s->k);
			if (s->k + size > fr->len)
				return 0; /* a load past the end drops the packet */
			a = 0;
			for (unsigned i = 0; i < size; i++)
				a = a << 8 | fr->b[s->k + i];
			break;
		}
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += a == s->k ? s->jt : s->jf;
			break;
		case BPF_RET | BPF_K:
			return s->k;
		default:
			cr_assert_fail("instruction %u: opcode %#x not interpreted", pc, s->code);
		}
	}
	cr_assert_fail("the program ran off its end");
	return 0;
}

/* What the kernel checks before it takes a program: jumps land inside, it ends in RET. */
static void check_shape(const struct sock_filter *f, unsigned n)
{
	cr_assert_gt(n, 0);
	cr_assert_leq(n, GM_FILTER_MAX_LEN);
	cr_assert_eq(BPF_CLASS(f[n - 1].code), BPF_RET);
	for (unsigned pc = 0; pc < n; pc++) {
		if (BPF_CLASS(f[pc].code) != BPF_JMP)
			continue;
		cr_assert(pc + 1 + f[pc].jt < n && pc + 1 + f[pc].jf < n,
		          "instruction %u jumps out", pc);
	}
}

/* The kernel's verdict on a PACKET_HOST packet: does it pass the socket filter? */
static bool kernel_accepts(const struct sock_filter *f, unsigned n, const struct frame *fr)
{
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = (struct sock_filter *)f};
	uint8_t got[sizeof(fr->b) + 1];
	int sv[2];
	ssize_t r;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(setsockopt(sv[1], SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)), 0,
	             "the kernel refused the program: %s", strerror(errno));
	/* A dropped datagram still counts as sent; delivery is done when send returns. */
	cr_assert_eq(send(sv[0], fr->b, fr->len, 0), (ssize_t)fr->len);
	r = recv(sv[1], got, sizeof(got), MSG_DONTWAIT);
	cr_assert(r >= 0 || errno == EAGAIN, "recv: %s", strerror(errno));
	if (r >= 0) {
		cr_assert_eq((size_t)r, fr->len);
		cr_assert_eq(memcmp(got, fr->b, fr->len), 0);
	}
	close(sv[0]);
	close(sv[1]);
	return r >= 0;
}

static void expect(const uint16_t *ports, unsigned nports, const struct frame *fr, int pkttype,
                   bool accept, const char *what)
{
	const struct gm_filter_spec spec = {
	    .ethertype = ET, .mac = us, .ports = ports, .nports = nports, .keep = KEEP};
	struct sock_filter f[GM_FILTER_MAX_LEN];
	unsigned n = gm_filter_build(f, &spec);
	uint32_t r;

	check_shape(f, n);
	r = run(f, n, fr, pkttype, IFX);
	cr_assert_eq(r != 0, accept, "%s (pkttype %d, %u ports): %s", what, pkttype, nports,
	             accept ? "dropped" : "accepted");
	cr_assert(!r || r == KEEP, "%s: keeps %u bytes", what, r);
	/* No interface check: a packet of no device is judged like any other. */
	cr_assert_eq(run(f, n, fr, pkttype, 0), r, "%s: the interface mattered", what);
	if (pkttype == PACKET_HOST)
		cr_assert_eq(kernel_accepts(f, n, fr), accept, "%s (%u ports): the kernel %s it",
		             what, nports, accept ? "dropped" : "accepted");
}

static const uint16_t two[] = {7, 4242};

Test(filter, host_frames_to_our_ports_only)
{
	struct frame a = frame(us, ET, 7), b = frame(us, ET, 4242), c = frame(us, ET, 8);

	expect(two, 2, &a, PACKET_HOST, true, "to port 7");
	expect(two, 2, &b, PACKET_HOST, true, "to port 4242");
	expect(two, 2, &c, PACKET_HOST, false, "to port 8");
	expect(NULL, 0, &a, PACKET_HOST, false, "no port open");
}

Test(filter, other_ethertypes_dropped)
{
	struct frame ip = frame(us, 0x0800, 7), near = frame(us, ET + 1, 7);

	expect(two, 2, &ip, PACKET_HOST, false, "IPv4");
	expect(two, 2, &near, PACKET_HOST, false, "EtherType + 1");
	expect(two, 2, &ip, PACKET_OUTGOING, false, "outgoing IPv4 to us");
}

/* Our own frames to our own MAC are the local path; other outgoing ones are not ours. */
Test(filter, outgoing_frames_only_to_our_mac)
{
	struct frame self = frame(us, ET, 7), away = frame(other, ET, 7);
	uint8_t hi_only[6] = {us[0], us[1], us[2], us[3], 0, 0};
	struct frame half = frame(hi_only, ET, 7), self_closed = frame(us, ET, 9);

	expect(two, 2, &self, PACKET_OUTGOING, true, "outgoing to us");
	expect(two, 2, &away, PACKET_OUTGOING, false, "outgoing to another MAC");
	expect(two, 2, &half, PACKET_OUTGOING, false,
	       "outgoing to a MAC sharing our first 4 bytes");
	expect(two, 2, &self_closed, PACKET_OUTGOING, false, "outgoing to us, closed port");
}

Test(filter, broadcast_and_other_hosts_dropped)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	struct frame b = frame(bcast, ET, 7), a = frame(us, ET, 7);

	expect(two, 2, &b, PACKET_BROADCAST, false, "broadcast");
	expect(two, 2, &a, PACKET_MULTICAST, false, "multicast");
	expect(two, 2, &a, PACKET_OTHERHOST, false, "another host's");
}

Test(filter, short_frames_dropped)
{
	struct frame a = frame(us, ET, 7);

	/* Cut inside gm_hdr.dst_port: the port load runs past the end. */
	a.len = GM_ETH_HLEN + offsetof(struct gm_hdr, dst_port) + 1;
	expect(two, 2, &a, PACKET_HOST, false, "cut in dst_port");
	a.len = GM_ETH_HLEN + offsetof(struct gm_hdr, dst_port) + 2;
	expect(two, 2, &a, PACKET_HOST, true, "ending right after dst_port");
}

/* Up to GM_FILTER_MAX_PORTS are compared, the last as well as the first; past it, any port. */
Test(filter, port_limit)
{
	uint16_t many[GM_FILTER_MAX_PORTS + 1];
	struct frame first, last, beyond, unlisted = frame(us, ET, 60000);

	for (unsigned i = 0; i <= GM_FILTER_MAX_PORTS; i++)
		many[i] = (uint16_t)(1000 + i);
	first = frame(us, ET, many[0]);
	last = frame(us, ET, many[GM_FILTER_MAX_PORTS - 1]);
	beyond = frame(us, ET, many[GM_FILTER_MAX_PORTS]);
	expect(many, GM_FILTER_MAX_PORTS, &first, PACKET_HOST, true, "first of the most ports");
	expect(many, GM_FILTER_MAX_PORTS, &last, PACKET_HOST, true, "last of the most ports");
	expect(many, GM_FILTER_MAX_PORTS, &beyond, PACKET_HOST, false, "one not listed");
	expect(many, GM_FILTER_MAX_PORTS, &last, PACKET_OUTGOING, true, "outgoing, last port");
	expect(many, GM_FILTER_MAX_PORTS + 1, &unlisted, PACKET_HOST, true, "too many: any port");
	expect(many, GM_FILTER_MAX_PORTS + 1, &unlisted, PACKET_OUTGOING, true,
	       "too many, outgoing to us: any port");
	struct frame away = frame(other, ET, 60000), ip = frame(us, 0x0800, 60000);

	expect(many, GM_FILTER_MAX_PORTS + 1, &away, PACKET_OUTGOING, false,
	       "too many, outgoing elsewhere");
	expect(many, GM_FILTER_MAX_PORTS + 1, &ip, PACKET_HOST, false, "too many, IPv4");
}

/*
 * gamma-rawd's filter (rawd_rx_filter): this interface, our EtherType,
 * frames to this host or our own outgoing ones to our MAC, any port, whole
 * frames.  The kernel has no interface for an AF_UNIX packet: it drops
 * every one, as the interpreter does, and takes the program.
 */
static void expect_rawd(const struct frame *fr, int pkttype, int ifindex, bool accept,
                        const char *what)
{
	struct sock_filter f[GM_FILTER_MAX_LEN];
	unsigned n = rawd_rx_filter(f, IFX, ET, us);
	uint32_t r;

	check_shape(f, n);
	r = run(f, n, fr, pkttype, ifindex);
	cr_assert_eq(r != 0, accept, "rawd: %s (pkttype %d, interface %d): %s", what, pkttype,
	             ifindex, accept ? "dropped" : "accepted");
	cr_assert(!r || r == 0x40000, "rawd: %s: keeps %u bytes, not whole frames", what, r);
	cr_assert_eq(run(f, n, fr, pkttype, 0), 0, "rawd: %s: passed with no interface", what);
	if (pkttype == PACKET_HOST)
		cr_assert_not(kernel_accepts(f, n, fr),
		              "rawd: %s: the kernel passed a packet of no "
		              "interface",
		              what);
}

Test(filter, rawd_this_interface_our_ethertype_any_port)
{
	struct frame a = frame(us, ET, 7), b = frame(us, ET, 60000), ip = frame(us, 0x0800, 7);
	struct frame near = frame(us, ET + 1, 7);

	expect_rawd(&a, PACKET_HOST, IFX, true, "to us, port 7");
	expect_rawd(&b, PACKET_HOST, IFX, true, "to us, port 60000");
	expect_rawd(&a, PACKET_HOST, IFX + 1, false, "from another interface");
	expect_rawd(&a, PACKET_OUTGOING, IFX + 1, false, "outgoing on another interface");
	expect_rawd(&ip, PACKET_HOST, IFX, false, "IPv4");
	expect_rawd(&near, PACKET_HOST, IFX, false, "EtherType + 1");
	expect_rawd(&ip, PACKET_OUTGOING, IFX, false, "outgoing IPv4 to us");
}

Test(filter, rawd_outgoing_only_to_our_mac_nothing_else)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t hi_only[6] = {us[0], us[1], us[2], us[3], 0, 0};
	struct frame self = frame(us, ET, 9), away = frame(other, ET, 9);
	struct frame half = frame(hi_only, ET, 9), all = frame(bcast, ET, 9);

	expect_rawd(&self, PACKET_OUTGOING, IFX, true, "outgoing to us");
	expect_rawd(&away, PACKET_OUTGOING, IFX, false, "outgoing to another MAC");
	expect_rawd(&half, PACKET_OUTGOING, IFX, false,
	            "outgoing to a MAC sharing our first 4 bytes");
	expect_rawd(&all, PACKET_BROADCAST, IFX, false, "broadcast");
	expect_rawd(&self, PACKET_MULTICAST, IFX, false, "multicast");
	expect_rawd(&self, PACKET_OTHERHOST, IFX, false, "another host's");
}

/* No port check, so no gm header needed; a frame cut in its EtherType is dropped. */
Test(filter, rawd_short_frames)
{
	struct frame a = frame(us, ET, 7);

	a.len = GM_ETH_HLEN;
	expect_rawd(&a, PACKET_HOST, IFX, true, "an Ethernet header alone");
	a.len = GM_ETH_HLEN - 1;
	expect_rawd(&a, PACKET_HOST, IFX, false, "cut in the EtherType");
}
