#!/bin/sh
# Adds host N (2..254) to the test network it runs in (Tools/netns): a network namespace hN joined by a veth
# pair to the bridge lan0, which is made with the first host and holds 10.77.0.1/24 and fd77::1/64. The host
# has lo and eth0 with 10.77.0.N/24 and fd77::N/64, and the link-local IPv6 address the kernel gives eth0;
# with --link-local, that one alone (a host on a LAN with no IPv4 and no IPv6 prefix). Duplicate address
# detection is off on the LAN, so link-local addresses are usable at once. Run commands on it with
# `ip netns exec hN COMMAND`. Used by the integration tests (TestNetwork.addHost) and the benches.
set -e
n=$1
only_link_local=0
[ "${2:-}" = --link-local ] && only_link_local=1
case $n in ''|*[!0-9]*) echo "add-host: usage: add-host.sh N (2..254) [--link-local]" >&2; exit 64 ;; esac
[ "$n" -ge 2 ] && [ "$n" -le 254 ] || { echo "add-host: N must be 2..254" >&2; exit 64; }
[ "${LYRE_NETNS:-}" = 1 ] || { echo "add-host: run inside Tools/netns (it makes the isolated network)" >&2; exit 69; }
if ! ip link show lan0 >/dev/null 2>&1; then
  ip link add lan0 type bridge mcast_snooping 0
  sysctl -qw net.ipv6.conf.lan0.accept_dad=0
  ip link set lan0 up
  ip addr add 10.77.0.1/24 dev lan0
  ip -6 addr add fd77::1/64 dev lan0 nodad
fi
ip netns add "h$n"
ip netns exec "h$n" sysctl -qw net.ipv6.conf.default.accept_dad=0
ip link add "veth$n" type veth peer name eth0 netns "h$n"
ip link set "veth$n" master lan0 up
ip -n "h$n" link set lo up
ip -n "h$n" link set eth0 up
if [ $only_link_local = 0 ]; then
  ip -n "h$n" addr add "10.77.0.$n/24" dev eth0
  ip -n "h$n" -6 addr add "fd77::$n/64" dev eth0 nodad
fi
