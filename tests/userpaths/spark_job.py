"""A real PySpark barrier stage (local mode, or the standalone master KYLIX_SPARK_MASTER names,
the driver on SPARK_LOCAL_IP: tests/netns/spark_cluster.sh): 4 tasks join one Kylix job with
kylix.from_spark (BarrierTaskContext.allGather), each runs the kyjob calls on its partition, and
the driver checks what they return against the single-process answer. Prints one PASS/FAIL line.

    python spark_job.py [tasks]
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kyjob  # noqa: E402


def task(it):
    # Runs in a PySpark worker: a fresh Python process, with this file's directory on sys.path.
    sys.path.insert(0, HERE)
    import kyjob as job

    from pyspark import BarrierTaskContext

    import kylix

    list(it)
    ctx = BarrierTaskContext.get()
    with kylix.from_spark(timeout_ms=60000) as comm:
        res = job.run(comm)
    res["executor"] = ctx.getTaskInfos()[ctx.partitionId()].address.rsplit(":", 1)[0]
    yield res


def main() -> int:
    from pyspark.sql import SparkSession

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    master = os.environ.get("KYLIX_SPARK_MASTER", f"local[{n}]")
    driver = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (SparkSession.builder.master(master).appName("kylix-barrier")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.enabled", "false").config("spark.driver.host", driver)
             .config("spark.driver.bindAddress", driver).getOrCreate())
    try:
        got = spark.sparkContext.parallelize(range(n), n).barrier().mapPartitions(task).collect()
    finally:
        spark.stop()
    errs = kyjob.check(got, n)
    for e in errs:
        print("FAIL", e)
    print(f"pyspark: {'PASS' if not errs else 'FAIL'} barrier stage of {n} tasks, "
          f"{len(got)} results, executors {','.join(sorted({g['executor'] for g in got}))}",
          flush=True)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
