#!/usr/bin/env bash
# spark_cluster.sh TAG PYTHON JOB_JAR KYLIX_JAR JNA_JAR - a Spark standalone cluster across
# network namespaces, and the Python and Java barrier jobs on it (tests/userpaths/spark_job.py,
# SparkKylixJob in JOB_JAR). Run as root; PYTHON's environment has pyspark and kylix.
#
#   kx<TAG>m  10.202.0.1  the bridge kx<TAG>br joining the others; master and drivers
#   kx<TAG>a  10.202.0.2  worker A (2 cores)        kx<TAG>b  10.202.0.3  worker B (2 cores)
#
# A barrier stage of 4 tasks needs 4 slots at once, so it spans both workers: its Kylix ranks
# talk across the namespaces, through the bridge. Every step is bounded; on any exit the
# processes started here are stopped and the namespaces deleted. Logs go to $SPARK_LOGS.
# `spark_cluster.sh TAG --down` only cleans up (what a killed run left).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tag=$1
M=kx${tag}m A=kx${tag}a B=kx${tag}b
down() {
  for ns in "$M" "$A" "$B"; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null || true
  done
  sleep 1
  for ns in "$M" "$A" "$B"; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
  done
  sh "$HERE/down.sh" "$M" "$A" "$B"
}
if [ "${2:-}" = --down ]; then down; exit 0; fi
py=$2 jobjar=$3 kylixjar=$4 jna=$5
spark_home=$("$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
logs=${SPARK_LOGS:-$(mktemp -d)}
log() { echo "spark_cluster: $*" >&2; }
trap down EXIT

# The namespaces: the bridge lives in M, one veth pair to each worker.
ip netns add "$M"; ip netns add "$A"; ip netns add "$B"
ip -n "$M" link add "kx${tag}br" type bridge
ip -n "$M" addr add 10.202.0.1/24 dev "kx${tag}br"
ip -n "$M" link set "kx${tag}br" up
i=2
for ns in "$A" "$B"; do
  ip link add "kx${tag}v$i" type veth peer name "kx${tag}w$i"
  ip link set "kx${tag}v$i" netns "$M"
  ip link set "kx${tag}w$i" netns "$ns"
  ip -n "$M" link set "kx${tag}v$i" master "kx${tag}br" up
  ip -n "$ns" addr add "10.202.0.$i/24" dev "kx${tag}w$i"
  ip -n "$ns" link set "kx${tag}w$i" up
  i=$((i + 1))
done
for ns in "$M" "$A" "$B"; do ip -n "$ns" link set lo up; done

# Spark's daemons: spark-class in the foreground of each namespace, logs to files. The workers'
# executors run PYTHON's interpreter for the Python tasks.
export SPARK_HOME="$spark_home" PYSPARK_PYTHON="$py" PYSPARK_DRIVER_PYTHON="$py" SPARK_NO_DAEMONIZE=1
master=spark://10.202.0.1:7077
ip netns exec "$M" env SPARK_LOCAL_IP=10.202.0.1 "$spark_home/bin/spark-class" \
  org.apache.spark.deploy.master.Master --host 10.202.0.1 --port 7077 --webui-port 8080 \
  >"$logs/master.log" 2>&1 &
i=2
for ns in "$A" "$B"; do
  mkdir -p "$logs/work$i"
  ip netns exec "$ns" env SPARK_LOCAL_IP=10.202.0.$i "$spark_home/bin/spark-class" \
    org.apache.spark.deploy.worker.Worker --host "10.202.0.$i" --cores 2 --memory 2g \
    --webui-port 8081 --work-dir "$logs/work$i" "$master" >"$logs/worker$i.log" 2>&1 &
  i=$((i + 1))
done
t=0
# Distinct workers: one whose first registration's answer was late registers again (a second
# "Registering worker" line for the same address), and the count of lines then never read 2.
until [ "$(grep -o 'Registering worker [0-9.:]*' "$logs/master.log" 2>/dev/null | sort -u | wc -l)" -ge 2 ]; do
  sleep 1; t=$((t + 1))
  # A fail-safe, not a speed check: three JVMs on 2 cores that other work keeps busy have taken
  # over 2 minutes to start and register (about 10 s on a quiet machine).
  if [ $t -ge 300 ]; then log "the workers did not register within 300 s"; tail -n 30 "$logs"/*.log >&2; exit 1; fi
done
log "master and 2 workers up in $t s"

rc=0
ip netns exec "$M" env SPARK_LOCAL_IP=10.202.0.1 KYLIX_SPARK_MASTER="$master" \
  timeout -k 5 240 "$py" "$HERE/../userpaths/spark_job.py" 4 || rc=1
ip netns exec "$M" env SPARK_LOCAL_IP=10.202.0.1 timeout -k 5 240 "$spark_home/bin/spark-submit" \
  --master "$master" --conf spark.driver.host=10.202.0.1 --conf spark.driver.bindAddress=10.202.0.1 \
  --jars "$kylixjar,$jna" --class SparkKylixJob "$jobjar" 4 || rc=1
# Which workers ran executors: one app directory per job on each of them.
for i in 2 3; do
  echo "worker 10.202.0.$i executors: $(find "$logs/work$i" -mindepth 2 -maxdepth 2 -type d | wc -l)"
done
exit $rc
