#!/usr/bin/env bash
# Training across two hosts: two network namespaces on this machine joined by
# a veth pair stand for two machines (each with its own addresses and host
# name); mpirun in the first starts rank 1 in the second through a launcher
# that enters it (in place of ssh), and the ranks talk over TCP only. The
# model equals one process's with the same shards (2 ranks x 1 thread = 1
# process x 2 threads), bit for bit; a rank stopped on the second host ends
# the job within the deadline, named. Only the namespaces' own addresses are
# used. Skips (77) without mpirun, without MPI in the build, or where
# namespaces cannot be made (not root, no CAP_NET_ADMIN, no iproute2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"

command -v ip >/dev/null || skip "no ip (apt install iproute2)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
[[ $(id -u) == 0 ]] || skip "making network namespaces needs root"
a=slm$$a b=slm$$b net=10.254.77 # a private network that exists only between the two namespaces
cleanup() {
  for p in "${stopped[@]}"; do kill -9 "$p" 2> /dev/null || true; done
  ip netns del "$a" 2> /dev/null || true
  ip netns del "$b" 2> /dev/null || true
}
trap cleanup EXIT
ip netns add "$a" 2> ns.log && ip netns add "$b" 2>> ns.log || skip "cannot make network namespaces: $(cat ns.log)"
ip link add "${a}v" type veth peer name "${b}v" 2>> ns.log || skip "cannot make a veth pair: $(cat ns.log)"
ip link set "${a}v" netns "$a" && ip link set "${b}v" netns "$b"
ip -n "$a" addr add $net.1/30 dev "${a}v" && ip -n "$b" addr add $net.2/30 dev "${b}v"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up && ip -n "$ns" link set "${ns}v" up; done

# the launcher mpirun calls instead of ssh: HOST COMMAND... runs COMMAND in
# HOST's namespace, under its own host name
cat > launch.sh <<LAUNCH
#!/usr/bin/env bash
case \$1 in $net.1) ns=$a ;; $net.2) ns=$b ;; *) echo "launch.sh: unknown host \$1" >&2; exit 1 ;; esac
shift
exec ip netns exec "\$ns" unshare --uts bash -c "hostname storylm-\$ns && \$*"
LAUNCH
chmod +x launch.sh
# on_hosts ARGS...: mpirun in the first namespace, one rank on each host, TCP between them
on_hosts() {
  ip netns exec "$a" unshare --uts bash -c 'hostname storylm-'"$a"' && exec "$@"' on_hosts \
    env ASAN_OPTIONS="$mpi_asan" timeout 120 mpirun -x ASAN_OPTIONS --host $net.1,$net.2 -np 2 \
    --mca plm_rsh_agent "$PWD/launch.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include $net.0/30 --mca oob_tcp_if_include $net.0/30 "$@"
}

# the ranks are in two namespaces (two host names, two network stacks)
on_hosts bash -c 'echo "$(hostname) $(readlink /proc/self/ns/net)"' > where.txt 2> where.log ||
  { cat where.log; fail "mpirun across the namespaces"; }
[[ $(sort -u where.txt | wc -l) == 2 && $(cut -d' ' -f2 where.txt | sort -u | wc -l) == 2 ]] ||
  fail "the ranks did not run in two namespaces: $(cat where.txt)"
grep -q "storylm-$a" where.txt && grep -q "storylm-$b" where.txt || fail "a rank ran outside the namespaces: $(cat where.txt)"

common=(--vocab vocab.txt --eval-every 10 --seed 7 --test-stories 20 --steps 20)
if ! on_hosts "$STORYLM" train slice.txt "${common[@]}" --threads 1 --out hosts.safetensors 2> hosts.log; then
  skip_without_mpi hosts.log
  cat hosts.log; fail "training on two hosts"
fi
grep -q "2 ranks exchanged" hosts.log || fail "rank 0 did not report the exchange: $(cat hosts.log)"
"$STORYLM" train slice.txt "${common[@]}" --threads 2 --out one.safetensors 2> one.log || { cat one.log; fail "train"; }
[[ "$(tensor_sums hosts.safetensors)" == "$(tensor_sums one.safetensors)" ]] ||
  fail "2 hosts x 1 thread differs from 1 process x 2 threads"

# rank 1, on the other host, stopped: the job ends within the deadline naming it
stop_rank 1 stop.safetensors stop.log on_hosts "$STORYLM" train slice.txt --vocab vocab.txt --eval-every 5 \
  --test-stories 20 --threads 1 --steps 400 --rank-timeout 3
echo "e2e_mpi_hosts: passed ($(grep "ranks exchanged" hosts.log))"
