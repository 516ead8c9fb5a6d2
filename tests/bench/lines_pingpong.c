/* lines_pingpong.c — the hardware's floor for a small message between two CPUs: two processes
 * pinned to CPUs 0 and 1 bounce messages of n cache lines through shared memory, LL-style (a
 * sequence word in each line, stored last; the reader waits for it in every line, then reads
 * the line), as a shared-memory ring's small frame travels. Prints the round trip; what a
 * frame's extra lines cost is the difference between n=1 and n=2, 3 (docs/measurements.md,
 * "The clock of a small step").
 *
 *   gcc -O2 tests/bench/lines_pingpong.c -o lines_pingpong && ./lines_pingpong 1 2000000 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINES 8
typedef struct { volatile uint64_t w[8]; } __attribute__((aligned(64))) line;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void put(line *m,int n,uint64_t seq){for(int i=0;i<n;i++){for(int j=0;j<7;j++)m[i].w[j]=seq+j; __atomic_store_n(&m[i].w[7],seq,__ATOMIC_RELEASE);}}
static uint64_t get(line *m,int n,uint64_t seq){uint64_t s=0;for(int i=0;i<n;i++){while(__atomic_load_n(&m[i].w[7],__ATOMIC_ACQUIRE)!=seq);for(int j=0;j<7;j++)s+=m[i].w[j];}return s;}
int main(int argc,char**argv){int n=argc>1?atoi(argv[1]):1;long iters=argc>2?atol(argv[2]):2000000;
 if(n<1||n>LINES||iters<=1000){fprintf(stderr,"usage: lines_pingpong [lines 1..%d] [iters over 1000]\n",LINES);return 2;}
 line *sh=mmap(0,2*LINES*64,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);memset(sh,0,2*LINES*64);
 line *a=sh,*b=sh+LINES;
 pid_t p=fork();
 if(p==0){pin(1);for(long i=1;i<=iters;i++){get(a,n,i);put(b,n,i);}_exit(0);}
 pin(0);uint64_t s=0;for(long i=1;i<=1000;i++){put(a,n,i);s+=get(b,n,i);}
 double t0=now();for(long i=1001;i<=iters;i++){put(a,n,i);s+=get(b,n,i);}double t=now()-t0;
 waitpid(p,0,0);printf("lines=%d round trip %.1f ns (%lu)\n",n,t/(iters-1000)*1e9,(unsigned long)(s&1));}
