/* A stand-in for fio on the capacity benches' loopback hosts (bench only: see bench/standin/build.py).

   It takes benchweb's command line (fio_job.py: --output-format=json, --status-interval=N, --output=FILE,
   --readonly, the job file) and writes what fio writes there, on fio's schedule: a cumulative status document
   every N seconds, then the final one once the job's ramp_time and runtime have passed, and exits 0. Every
   document is one real fio document (template.h, made by build.py from a recorded output) with its counters
   scaled to the time the job has run and its clock, job name and job options made this run's: the rates,
   latencies and percentiles stay the recording's, digit for digit. No I/O is done; between two documents it
   sleeps, so a thousand of them cost a fraction of one CPU. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum kind { LITERAL, SCALED, EPOCH, EPOCH_MS, CTIME, JOBNAME, OPTIONS, ELAPSED, ETA };

struct piece {
    const char *text; /* written before the value */
    unsigned length;  /* of text */
    enum kind kind;
    long long value; /* SCALED: the recorded final document's value */
};

#include "template.h" /* FIO_VERSION, RECORDED_RUNTIME_MS, RECORDED_JOB_RUNTIME_S, PIECES */

#define SETUP_MS 100 /* fio's start before the job's clock runs: laying out the file, forking the job */
#define MAX_OPTIONS 256
/* Measured with 1,000 at once (bench/fleet.py --standin-only): 5.4 % of one CPU with the default 50 us slack,
   4.0 % with 20 ms. */
#define TIMER_SLACK_MS 20

static volatile sig_atomic_t stop_signal;

static void on_signal(int signum) { stop_signal = signum; }

struct job {
    char name[256];
    char *keys[MAX_OPTIONS], *values[MAX_OPTIONS];
    int options;
    long long runtime_ms, ramp_ms;
};

/* "120", "120s", "2m", "1h", "500ms": fio's time values, whole seconds by default. */
static long long time_ms(const char *text) {
    char *end;
    long long number = strtoll(text, &end, 10);
    if (!strcmp(end, "ms")) return number;
    if (!strcmp(end, "m")) return number * 60000;
    if (!strcmp(end, "h")) return number * 3600000;
    return number * 1000;
}

static char *trimmed(char *text) {
    while (*text == ' ' || *text == '\t') text++;
    char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) *--end = 0;
    return text;
}

/* The job file's last section that is not [global]: its name and its options as written, as fio echoes them. */
static int read_job(const char *path, struct job *job) {
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    char line[4096];
    int in_global = 0;
    while (fgets(line, sizeof line, file)) {
        char *text = trimmed(line);
        if (!*text || *text == ';' || *text == '#') continue;
        if (*text == '[') {
            char *close = strchr(text, ']');
            if (close) *close = 0;
            in_global = !strcmp(text + 1, "global");
            if (!in_global) {
                snprintf(job->name, sizeof job->name, "%s", text + 1);
                for (int i = 0; i < job->options; i++) free(job->keys[i]), free(job->values[i]);
                job->options = 0;
                job->runtime_ms = job->ramp_ms = -1;
            }
            continue;
        }
        if (in_global || job->options == MAX_OPTIONS) continue;
        char *equals = strchr(text, '=');
        char *value = equals ? trimmed(equals + 1) : "";
        if (equals) *equals = 0;
        char *key = trimmed(text);
        job->keys[job->options] = strdup(key);
        job->values[job->options++] = strdup(value);
        if (!strcmp(key, "runtime")) job->runtime_ms = time_ms(value);
        if (!strcmp(key, "ramp_time")) job->ramp_ms = time_ms(value);
    }
    fclose(file);
    return job->name[0] ? 0 : -1;
}

/* A whole number in decimal: what sprintf("%lld") writes, at a tenth of its cost (a document has ~50). */
static size_t decimal(char *out, long long number) {
    char digits[24];
    size_t n = 0, length = 0;
    unsigned long long rest = number < 0 ? -(unsigned long long)number : (unsigned long long)number;
    do digits[n++] = (char)('0' + rest % 10); while (rest /= 10);
    if (number < 0) out[length++] = '-';
    while (n) out[length++] = digits[--n];
    return length;
}

static size_t json_string(char *out, const char *text) {
    size_t n = 0;
    for (; *text; text++) {
        if (*text == '"' || *text == '\\') out[n++] = '\\';
        out[n++] = *text;
    }
    return n;
}

static size_t job_options(char *out, const struct job *job) {
    size_t n = 0;
    for (int i = 0; i < job->options; i++) {
        n += (size_t)sprintf(out + n, "        \"");
        n += json_string(out + n, job->keys[i]);
        n += (size_t)sprintf(out + n, "\" : \"");
        n += json_string(out + n, job->values[i]);
        n += (size_t)sprintf(out + n, i + 1 < job->options ? "\",\n" : "\"\n");
    }
    return n;
}

/* One document, as fio writes it `ran_ms` into the job's runtime and `wall_ms` after its own start. */
static size_t document(char *out, const struct job *job, long long ran_ms, long long wall_ms, int final) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    size_t n = 0;
    for (size_t i = 0; i < sizeof PIECES / sizeof PIECES[0]; i++) {
        const struct piece *p = &PIECES[i];
        memcpy(out + n, p->text, p->length);
        n += p->length;
        switch (p->kind) {
        case LITERAL: break;
        case SCALED:
            /* Rounded, as a counter is whole; the rates and latencies beside it are the recording's own. */
            n += decimal(out + n, (p->value * ran_ms + RECORDED_RUNTIME_MS / 2) / RECORDED_RUNTIME_MS);
            break;
        case EPOCH: n += decimal(out + n, (long long)now.tv_sec); break;
        case EPOCH_MS: n += decimal(out + n, (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000); break;
        case CTIME: {
            char text[64];
            ctime_r(&now.tv_sec, text);
            text[strcspn(text, "\n")] = 0;
            n += (size_t)sprintf(out + n, "%s", text);
            break;
        }
        case JOBNAME: n += json_string(out + n, job->name); break;
        case OPTIONS: n += job_options(out + n, job); break;
        case ELAPSED: n += decimal(out + n, (wall_ms + 999) / 1000); break;
        case ETA: n += (size_t)sprintf(out + n, "%s", final ? "0" : "2147483647"); break;
        }
    }
    return n;
}

static int write_all(int fd, const char *data, size_t length) {
    while (length) {
        ssize_t done = write(fd, data, length);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) return -1;
        data += done, length -= (size_t)done;
    }
    return 0;
}

static long long elapsed_ms(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000LL + (now.tv_nsec - start->tv_nsec) / 1000000;
}

/* With BENCH_STANDIN_STARTS set (bench/fleet.py sets it for every login), one line per start, the output file,
   appended to that file in one write: a run whose tool was started twice shows as two lines. */
static void note_start(const char *output) {
    const char *starts = getenv("BENCH_STANDIN_STARTS");
    if (!starts || !output) return;
    char line[4200];
    int length = snprintf(line, sizeof line, "%s\n", output);
    int fd = open(starts, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || length <= 0 || (size_t)length >= sizeof line) {
        if (fd >= 0) close(fd);
        return;
    }
    if (write(fd, line, (size_t)length) != length) fprintf(stderr, "fio stand-in: could not note the start\n");
    close(fd);
}

int main(int argc, char **argv) {
    const char *output = NULL, *job_path = NULL;
    long long interval_ms = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--version")) {
            printf("%s\n", FIO_VERSION);
            return 0;
        } else if (!strncmp(arg, "--output-format=", 16)) {
            if (strcmp(arg + 16, "json") && strcmp(arg + 16, "json+")) {
                fprintf(stderr, "fio stand-in: only --output-format=json or json+ is replayed, not %s\n", arg + 16);
                return 1;
            }
        } else if (!strncmp(arg, "--output=", 9)) {
            output = arg + 9;
        } else if (!strncmp(arg, "--status-interval=", 18)) {
            interval_ms = time_ms(arg + 18);
        } else if (!strcmp(arg, "--readonly")) {
            /* Nothing is written anyway. */
        } else if (!strncmp(arg, "--", 2)) {
            fprintf(stderr, "fio: unrecognized option '%s'\n", arg);
            fprintf(stderr, "fio stand-in: benchweb's single-run command line only (no client/server mode)\n");
            return 1;
        } else {
            job_path = arg;
        }
    }
    static struct job job;
    if (!job_path) {
        printf("No job(s) defined\n\n%s\n", FIO_VERSION);
        return 1;
    }
    if (read_job(job_path, &job)) {
        fprintf(stderr, "fio: failed to open or read job file %s\n", job_path);
        return 1;
    }
    note_start(output);
    long long runtime_ms = job.runtime_ms > 0 ? job.runtime_ms : RECORDED_JOB_RUNTIME_S * 1000;
    long long ramp_ms = job.ramp_ms > 0 ? job.ramp_ms : 0;
    /* The final document's clock keeps the recording's ratio of runtime to the runtime asked (3001 ms for 3 s). */
    long long final_ran_ms = runtime_ms * RECORDED_RUNTIME_MS / (RECORDED_JOB_RUNTIME_S * 1000);
    long long end_ms = SETUP_MS + ramp_ms + runtime_ms;

    int fd = 1;
    if (output && (fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        fprintf(stderr, "fio: failed to open output file %s\n", output);
        return 1;
    }
    size_t size = 4096;
    for (size_t i = 0; i < sizeof PIECES / sizeof PIECES[0]; i++) size += PIECES[i].length + 32;
    for (int i = 0; i < job.options; i++) size += 2 * (strlen(job.keys[i]) + strlen(job.values[i])) + 32;
    char *buffer = malloc(size);
    if (!buffer) return 1;

    struct sigaction action = {.sa_handler = on_signal};
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    /* Wake-ups up to TIMER_SLACK_MS late may be merged with others': a thousand stand-ins then wake in a few
       timer interrupts rather than a thousand, and a document is still written within fio's own jitter. */
    prctl(PR_SET_TIMERSLACK, TIMER_SLACK_MS * 1000000UL, 0, 0, 0);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long long next = interval_ms; !stop_signal;) {
        long long at = (interval_ms > 0 && next < end_ms) ? next : end_ms;
        struct timespec wake = {start.tv_sec + (time_t)(at / 1000), start.tv_nsec + (at % 1000) * 1000000};
        if (wake.tv_nsec >= 1000000000) wake.tv_sec++, wake.tv_nsec -= 1000000000;
        if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL) == EINTR) continue;
        if (at == end_ms) break;
        long long ran = at - SETUP_MS - ramp_ms;
        ran = ran < 0 ? 0 : ran > final_ran_ms ? final_ran_ms : ran;
        if (write_all(fd, buffer, document(buffer, &job, ran, at, 0))) return 1;
        next += interval_ms;
    }
    long long wall = elapsed_ms(&start);
    long long ran = stop_signal ? wall - SETUP_MS - ramp_ms : final_ran_ms;
    ran = ran < 0 ? 0 : ran > final_ran_ms ? final_ran_ms : ran;
    if (stop_signal) fprintf(stderr, "fio: terminating on signal %d\n", (int)stop_signal);
    if (write_all(fd, buffer, document(buffer, &job, ran, wall, 1))) return 1;
    if (fd != 1) close(fd);
    /* fio ends with status 128 when a signal stopped its jobs (fio 3.33, measured), 0 otherwise. */
    return stop_signal ? 128 : 0;
}
