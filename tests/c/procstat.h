/* What a test process reads of itself in /proc, to tell leaks from growth: a field of
   /proc/self/status (VmRSS in kB, Threads) and the number of open descriptors. Shared by the
   elastic tests (tests/c/elastic.c) and the chaos workload (tests/chaos/c/workload.c). */
#ifndef KYLIX_TEST_PROCSTAT_H
#define KYLIX_TEST_PROCSTAT_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* proc_status is the number after "key:" in /proc/self/status, or -1. */
static long proc_status(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t kl = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ':') v = atol(line + kl + 1);
  if (f) fclose(f);
  return v;
}

/* count_fds is the number of this process's open descriptors, the one that lists them aside. */
static long count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  long n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  if (d) closedir(d);
  return n - 1;
}

#endif
