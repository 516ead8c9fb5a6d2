/* pingpong.c — the operating system's floor for a blocking exchange on this machine: two
 * processes bounce 64 bytes over a loopback TCP connection, each blocked in read() until the
 * other's bytes arrive (as Kylix's ranks wait: they block, never poll). Prints the round trip;
 * a one-way wake is about half of it. Open MPI's direct program polls (mpi_yield_when_idle), so
 * its ranks pay no such wake.
 *
 *   gcc -O2 tests/bench/pingpong.c -o pingpong && ./pingpong */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 20000, BYTES = 64 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int read_full(int s, char *b, int n) {
  for (int got = 0; got < n;) {
    ssize_t r = read(s, b + got, n - got);
    if (r <= 0) return -1;
    got += (int)r;
  }
  return 0;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

int main(void) {
  int one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr *)&a, &len))
    die("listen");
  char buf[BYTES] = {0};
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) { /* the echo side */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a)) die("connect");
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (int i = 0; i < ROUNDS; i++)
      if (read_full(s, buf, BYTES) || write(s, buf, BYTES) != BYTES) _exit(1);
    _exit(0);
  }
  int s = accept(ls, NULL, NULL);
  if (s < 0) die("accept");
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  double t0 = now();
  for (int i = 0; i < ROUNDS; i++)
    if (write(s, buf, BYTES) != BYTES || read_full(s, buf, BYTES)) die("ping");
  double rt = (now() - t0) / ROUNDS * 1e6;
  int status = 0;
  waitpid(child, &status, 0);
  printf("blocking TCP ping-pong over loopback: round trip %.1f us (%d rounds of %d bytes)\n", rt,
         ROUNDS, BYTES);
  return status != 0;
}
