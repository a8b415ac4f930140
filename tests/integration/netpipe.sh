#!/bin/bash
# A suite nobody here wrote: NetPIPE's integrity check (Debian's
# netpipe-openmpi) over btl self,gamma on a 2-node --netns cluster, in each
# of its modes (ping-pong, preposted, unaligned buffers, a one-way stream,
# synchronous sends, ANY_SOURCE, both directions at once), every size from
# 1 byte to 1 MiB with neighbours 3 bytes either side, every byte checked
# by NetPIPE itself.  experiments/conformance/netpipe --quick runs it and
# judges each mode.  The ranks' unexpected-message cap is 1 MiB, so the
# stream mode's bursts meet it (11075 and 18292 frames refused in two
# runs by hand) and receivers hold their senders back while NetPIPE
# checks every byte.
set -u
. "$(dirname "$0")/conform-lib.sh"
conform_quick netpipe 7 '^[a-z]+ +gamma +[0-9]+ .* ok$' \
	"NetPIPE's integrity check passes over btl gamma in 7 modes" --ux-cap 1048576
