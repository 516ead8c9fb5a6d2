"""Kylix inside the engines users already run, checked against a single-process answer
(kyjob.py): mpi4py under Debian's Open MPI (kylix.from_mpi), a PySpark barrier stage in local
mode (kylix.from_spark), and the Java SparkBarrier recipe through spark-submit."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Tuple

import pytest

import kyjob
from conftest import HERE, REPO, newcomer_env, run

TASKS = 4
JAR_DIR = REPO / "bindings/java/target"


def engine_env(**extra: str) -> dict:
    # Spark binds and advertises loopback only; its Python workers are this interpreter.
    return newcomer_env(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                        PYSPARK_DRIVER_PYTHON=sys.executable, PATH=os.path.dirname(sys.executable)
                        + os.pathsep + os.environ.get("PATH", ""), **extra)


def test_checker_rejects_a_wrong_answer() -> None:
    right = [kyjob.expected(r, 2) for r in range(2)]
    assert kyjob.check(right, 2) == []
    wrong = [dict(x) for x in right]
    wrong[1]["reduce"] = list(wrong[1]["reduce"])
    wrong[1]["reduce"][5] += 1
    assert kyjob.check(wrong, 2) == ["rank 1: reduce differs from the single-process answer"]
    assert kyjob.check(right[:1], 2)


def test_mpi4py_from_mpi() -> None:
    mpirun = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
    assert mpirun, "no mpirun: tests/netns/deps.sh mpi installs Debian's openmpi-bin"
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    cmd = [mpirun, *root, "--oversubscribe", "--mca", "btl", "self,tcp", "--mca",
           "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo", "-n", str(TASKS),
           sys.executable, str(HERE / "mpi_job.py")]
    r = run(cmd, timeout=180, env=engine_env())
    assert r.returncode == 0 and f"mpi4py: PASS {TASKS} ranks" in r.stdout, r.stdout[-6000:]


def test_pyspark_barrier_stage() -> None:
    r = run([sys.executable, str(HERE / "spark_job.py"), str(TASKS)], timeout=300,
            env=engine_env())
    assert r.returncode == 0 and f"pyspark: PASS barrier stage of {TASKS} tasks" in r.stdout, \
        r.stdout[-6000:]


def java_job(tmp_path: Path) -> Tuple[Path, Path, Path, Path]:
    """SparkKylixJob compiled into tmp_path/job.jar; returns Spark's home, that jar, the kylix
    jar and JNA's."""
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    kylix_jar = JAR_DIR / "kylix-0.1.0.jar"
    jna = sorted((JAR_DIR / "lib").glob("jna-*.jar"))
    assert kylix_jar.is_file() and jna, "run.sh builds bindings/java first (mvn package)"
    classes = tmp_path / "classes"
    r = run(["javac", "-nowarn", "-d", str(classes), "-cp", f"{spark_home}/jars/*:{kylix_jar}",
             str(HERE / "SparkKylixJob.java")], timeout=180)
    assert r.returncode == 0, r.stdout
    r = run(["jar", "cf", str(tmp_path / "job.jar"), "-C", str(classes), "."], timeout=60)
    assert r.returncode == 0, r.stdout
    return spark_home, tmp_path / "job.jar", kylix_jar, jna[0]


def test_spark_submit_java_recipe(tmp_path: Path) -> None:
    spark_home, job_jar, kylix_jar, jna = java_job(tmp_path)
    r = run([str(spark_home / "bin/spark-submit"), "--master", f"local[{TASKS}]",
             "--conf", "spark.driver.host=127.0.0.1",
             "--conf", "spark.driver.bindAddress=127.0.0.1",
             "--jars", f"{kylix_jar},{jna}", "--class", "SparkKylixJob",
             str(job_jar), str(TASKS)],
            timeout=300, env=engine_env(SPARK_HOME=str(spark_home)))
    assert r.returncode == 0 and f"spark-submit: PASS barrier stage of {TASKS} tasks" in \
        r.stdout, r.stdout[-6000:]


def test_spark_standalone_cluster_across_namespaces(tmp_path: Path) -> None:
    # A master and two workers (2 cores each), each worker in a network namespace of its own; the
    # Python and the Java barrier jobs of 4 tasks then span both (tests/netns/spark_cluster.sh).
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("network namespaces need root and iproute2")
    _, job_jar, kylix_jar, jna = java_job(tmp_path)
    tag = str(os.getpid() % 10000)
    script = str(REPO / "tests/netns/spark_cluster.sh")
    try:
        r = run([script, tag, sys.executable, str(job_jar), str(kylix_jar), str(jna)], timeout=900,
                env=newcomer_env(PATH=os.path.dirname(sys.executable) + os.pathsep
                                 + os.environ.get("PATH", ""), SPARK_LOGS=str(tmp_path)))
    finally:
        run([script, tag, "--down"], timeout=60)  # the script cleans up, unless it was killed
    # Spark's INFO lines bury the Python job's failure under the Java job's log: lead with the
    # lines that say what failed, then the tail.
    said = "\n".join(l for l in r.stdout.splitlines()
                     if "INFO" not in l and ("pyspark" in l or "kylix" in l.lower() or "Error" in l
                                             or "Traceback" in l or "spark-submit:" in l
                                             or l.startswith("spark_cluster:")))
    assert r.returncode == 0, said[-4000:] + "\n---\n" + r.stdout[-3000:]
    assert f"pyspark: PASS barrier stage of {TASKS} tasks, {TASKS} results, executors " \
        "10.202.0.2,10.202.0.3" in r.stdout, r.stdout[-6000:]
    assert f"spark-submit: PASS barrier stage of {TASKS} tasks" in r.stdout, r.stdout[-6000:]
    for ip in ("10.202.0.2", "10.202.0.3"):      # each worker ran an executor for each job
        assert f"worker {ip} executors: 2" in r.stdout, r.stdout[-6000:]
    left = run(["ip", "netns", "list"], timeout=30).stdout
    assert f"kx{tag}" not in left, left
