/* Known waits for the off-CPU tests: each waiting function blocks in a
 * system call made by its own instructions (so a frame-pointer walk from
 * the syscall starts in it, not in a libc wrapper without a frame):
 *   wait_sleep: nanosleep, 4 x 100 ms;
 *   wait_pipe:  a blocking read of a pipe another thread writes 400 ms later;
 *   wait_mutex: a futex lock another thread holds for 400 ms;
 *   spin:       busy for about 200 ms (never waits).
 * Usage: waits [MS] (the unit of every wait, 100 by default). At the end
 * it prints, per waiting function, the wall-clock ms its waits took
 * (`wait_sleep 401.2`): on a loaded machine a woken thread may wait for
 * a CPU, and that time is both off the CPU and in these figures. Then
 * the CPU ms spin took (`spin_cpu`), and of the main thread its wall
 * time from main's start (`main_wall`) and the time it waited for a CPU
 * meanwhile (`main_delay`, schedstat's run delay), in ms. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long unit_ms = 100;
static double sleep_ms, pipe_ms, mutex_ms;

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static inline __attribute__((always_inline)) long sys3(long n, long a, long b, long c)
{
	long r;
	register long r10 __asm__("r10") = 0;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
}

static struct timespec ms(long n)
{
	struct timespec t = { n / 1000, (n % 1000) * 1000000L };
	return t;
}

__attribute__((noinline)) void wait_sleep(void)
{
	for (int i = 0; i < 4; i++) {
		struct timespec t = ms(unit_ms);
		double a = now_ms();
		sys3(SYS_nanosleep, (long)&t, 0, 0);
		sleep_ms += now_ms() - a;
	}
}

static void nap(long n)
{
	struct timespec t = ms(n);
	nanosleep(&t, 0);
}

static int fds[2];

static void *writer(void *arg)
{
	(void)arg;
	nap(4 * unit_ms);
	char c = 'x';
	if (write(fds[1], &c, 1) != 1)
		abort();
	return 0;
}

__attribute__((noinline)) void wait_pipe(void)
{
	char c;
	pthread_t t;
	if (pipe(fds) || pthread_create(&t, 0, writer, 0))
		abort();
	double a = now_ms();
	sys3(SYS_read, fds[0], (long)&c, 1);
	pipe_ms = now_ms() - a;
	pthread_join(t, 0);
}

static atomic_int lock_word;
static atomic_int held;

static void *holder(void *arg)
{
	(void)arg;
	atomic_store(&lock_word, 1);
	atomic_store(&held, 1);
	nap(4 * unit_ms);
	atomic_store(&lock_word, 0);
	syscall(SYS_futex, &lock_word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
	return 0;
}

__attribute__((noinline)) void wait_mutex(void)
{
	pthread_t t;
	if (pthread_create(&t, 0, holder, 0))
		abort();
	while (!atomic_load(&held))
		sched_yield();
	int expect = 0;
	double a = now_ms();
	while (!atomic_compare_exchange_strong(&lock_word, &expect, 1)) {
		sys3(SYS_futex, (long)&lock_word, FUTEX_WAIT_PRIVATE, 1);
		expect = 0;
	}
	mutex_ms = now_ms() - a;
	atomic_store(&lock_word, 0);
	pthread_join(t, 0);
}

__attribute__((noinline)) void spin(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	volatile unsigned long x = 0;
	do {
		for (int i = 0; i < 100000; i++)
			x += i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 2 * unit_ms);
}

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* This thread's time waiting on a run queue (ms; 0 without schedstat). */
static double run_delay_ms(void)
{
	unsigned long long run = 0, delay = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &delay) != 2)
			delay = 0;
		fclose(f);
	}
	return delay / 1e6;
}

int main(int argc, char **argv)
{
	double start = now_ms(), delay = run_delay_ms();
	if (argc > 1)
		unit_ms = atol(argv[1]);
	double c = cpu_ms();
	spin();
	double spin_cpu = cpu_ms() - c;
	wait_sleep();
	wait_pipe();
	wait_mutex();
	double wall = now_ms() - start;
	delay = run_delay_ms() - delay;
	printf("wait_sleep %.3f\nwait_pipe %.3f\nwait_mutex %.3f\n", sleep_ms, pipe_ms, mutex_ms);
	printf("spin_cpu %.3f\nmain_wall %.3f\nmain_delay %.3f\n", spin_cpu, wall, delay);
	return 0;
}
