/* gamma-stream-node: one node's sender or receiver of the double-queue
 * stream experiment (testing streams over gamma, local streams over TCP or
 * low-class gamma).  See --help and experiments/dq/README.md. */
#include <stdio.h>

#include "sn.h"

int main(int argc, char **argv)
{
	struct sn_opts o;
	int r = sn_parse_opts(argc, argv, &o);

	if (r)
		return r < 0 ? 1 : 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	switch (o.role) {
	case SN_NOW:
		printf("%.6f\n", sn_now());
		return 0;
	case SN_GAMMA_SEND:
		return sn_gamma_send(&o);
	case SN_GAMMA_RECV:
		return sn_gamma_recv(&o);
	case SN_TCP_SEND:
		return sn_tcp_send(&o);
	case SN_TCP_RECV:
		return sn_tcp_recv(&o);
	}
	return 1;
}
