/* No file ever destroyed: what a file holds is told from its first bytes; an
 * output is refused when it is an input (by any name), a family member or a
 * temporary named like an input, or holds a model or stories; temporaries
 * never follow a planted link; a lock is stale only when it is a lock of a
 * dead process, and one being taken is held; a plan's claims refuse a second
 * writer; a file that must be new never replaces one; numbers never wrap. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE /* flock */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "storylm/fileio.h"
#include "storylm/outputs.h"
#include "storylm/parse.h"
#include "storylm/text.h"

static char dir[PATH_MAX];

/* dir/name into a static buffer of four (enough for one expression). */
static const char *at(const char *name) {
    static char bufs[4][PATH_MAX + 64];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

static void put(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (f) fwrite(data, 1, len, f), fclose(f);
}

static void put_text(const char *path, const char *text) { put(path, text, strlen(text)); }

static char *slurp(const char *path) {
    char *data = NULL;
    size_t len;
    Error e = {0};
    return slm_file_read_all(path, 0, &data, &len, &e) ? NULL : data;
}

/* A safetensors header with the given metadata JSON. */
static void put_safetensors(const char *path, const char *metadata) {
    char header[256];
    int n = snprintf(header, sizeof header, "{\"__metadata__\":%s}", metadata);
    unsigned char buf[300] = {0};
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, header, (size_t)n);
    put(path, buf, 8 + (size_t)n);
}

static void kinds_are_told(void) {
    put_safetensors(at("m.safetensors"), "{\"arch\":\"attention\"}");
    put_safetensors(at("a.safetensors"), "{\"format\":\"storylm-activations\"}");
    put_text(at("vocab.txt"), "[UNK]\n[EOS]\n!\n");
    put_text(at("p.svg"), "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n");
    put_text(at("x.lock"), "12345\n");
    put_text(at("s.txt"), "Lily found a shell.\n<|endoftext|>\n");
    put_text(at("empty"), "");
    put(at("bin"), "a\0b", 3);
    CHECK(slm_file_kind(at("m.safetensors")) == FILE_MODEL);
    CHECK(slm_file_kind(at("a.safetensors")) == FILE_ACTIVATIONS);
    CHECK(slm_file_kind(at("vocab.txt")) == FILE_VOCAB);
    CHECK(slm_file_kind(at("p.svg")) == FILE_SVG);
    CHECK(slm_file_kind(at("x.lock")) == FILE_LOCK);
    CHECK(slm_file_kind(at("s.txt")) == FILE_TEXT);
    CHECK(slm_file_kind(at("empty")) == FILE_NONE);
    CHECK(slm_file_kind(at("missing")) == FILE_NONE);
    CHECK(slm_file_kind(at("bin")) == FILE_OTHER);
}

/* One output against one input: 0 when the plan passes. */
static int plan_one(const char *in, const char *out, FileKind kind, bool force) {
    OutputPlan p;
    Error e = {0};
    slm_outputs_init(&p, force);
    slm_outputs_read(&p, in);
    slm_outputs_write(&p, out, kind);
    return slm_outputs_check(&p, &e);
}

static void an_input_is_never_an_output(void) {
    char rel[PATH_MAX + 64];
    CHECK(plan_one(at("m.safetensors"), at("m.safetensors"), FILE_ACTIVATIONS, true) != 0);
    /* by another name: a link, a "..", a hard link */
    unlink(at("link.safetensors"));
    CHECK(symlink("m.safetensors", at("link.safetensors")) == 0);
    CHECK(plan_one(at("m.safetensors"), at("link.safetensors"), FILE_ACTIVATIONS, true) != 0);
    snprintf(rel, sizeof rel, "%s/../%s/m.safetensors", dir, strrchr(dir, '/') + 1);
    CHECK(plan_one(at("m.safetensors"), rel, FILE_ACTIVATIONS, true) != 0);
    unlink(at("hard.txt"));
    CHECK(link(at("s.txt"), at("hard.txt")) == 0);
    CHECK(plan_one(at("s.txt"), at("hard.txt"), FILE_VOCAB, true) != 0);
    /* an input named like an output's temporary, which stale-temporary cleaning would remove */
    put_text(at("v.txt.tmp.99999999"), "Lily.\n");
    CHECK(plan_one(at("v.txt.tmp.99999999"), at("v.txt"), FILE_VOCAB, false) != 0);
    CHECK(plan_one(at("s.txt"), at("new.txt"), FILE_VOCAB, false) == 0);
}

static void existing_files_are_kept(void) {
    CHECK(plan_one(NULL, at("m.safetensors"), FILE_ACTIVATIONS, false) != 0); /* a model */
    CHECK(plan_one(NULL, at("s.txt"), FILE_SVG, false) != 0);                 /* stories */
    CHECK(plan_one(NULL, at("s.txt"), FILE_SVG, true) == 0);                  /* --force */
    CHECK(plan_one(NULL, at("p.svg"), FILE_SVG, false) == 0);                 /* its own kind */
    CHECK(plan_one(NULL, at("a.safetensors"), FILE_ACTIVATIONS, false) == 0);
    CHECK(plan_one(NULL, at("vocab.txt"), FILE_VOCAB, false) == 0);
    CHECK(plan_one(NULL, at("m.safetensors"), FILE_MODEL, false) != 0); /* a model only with write_own */
    OutputPlan p;
    Error e = {0};
    slm_outputs_init(&p, false);
    slm_outputs_write_own(&p, at("m.safetensors"), FILE_MODEL);
    CHECK(slm_outputs_check(&p, &e) == 0);
}

static void families_are_checked(void) {
    OutputPlan p;
    Error e = {0};
    put_text(at("run.step4.safetensors"), "Lily.\n");
    slm_outputs_init(&p, false);
    slm_outputs_read(&p, at("run.step4.safetensors"));
    slm_outputs_write(&p, at("run.safetensors"), FILE_MODEL);
    slm_outputs_family(&p, at("run.step"), ".safetensors", FILE_MODEL, false);
    CHECK(slm_outputs_check(&p, &e) != 0 && strstr(e.message, "named like"));
    slm_outputs_init(&p, false); /* not an input: an existing member is kept all the same */
    slm_outputs_write(&p, at("run.safetensors"), FILE_MODEL);
    slm_outputs_family(&p, at("run.step"), ".safetensors", FILE_MODEL, false);
    CHECK(slm_outputs_check(&p, &e) != 0);
    unlink(at("run.step4.safetensors"));
    CHECK(slm_outputs_check(&p, &e) == 0);
}

static void temporaries_never_follow_a_link(void) {
    char name[PATH_MAX + 64], *temp = NULL;
    Error e = {0};
    put_text(at("victim.txt"), "keep me\n");
    snprintf(name, sizeof name, "%s.tmp.%ld", at("out.txt"), (long)getpid());
    unlink(name);
    CHECK(symlink(at("victim.txt"), name) == 0);
    int fd = slm_temp_open(at("out.txt"), &temp, &e);
    CHECK(fd >= 0 && temp && strcmp(temp, name) != 0);
    if (fd >= 0) close(fd), unlink(temp);
    free(temp);
    CHECK(slm_file_write_atomic(at("out.txt"), "new\n", 4, &e) == 0);
    char *victim = slurp(at("victim.txt")), *out = slurp(at("out.txt"));
    CHECK(victim && strcmp(victim, "keep me\n") == 0);
    CHECK(out && strcmp(out, "new\n") == 0);
    free(victim), free(out);
    unlink(name);
}

/* A PID that no longer runs: a child that has exited and been reaped. */
static long dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, NULL, 0);
    return (long)pid;
}

static void locks_are_stale_only_when_locks(void) {
    FileLock l;
    Error e = {0};
    char text[32];
    snprintf(text, sizeof text, "%ld\n", dead_pid());
    put_text(at("x.safetensors.lock"), text);
    CHECK(slm_file_lock(&l, at("x.safetensors"), &e) == 0); /* a dead run's lock is taken over */
    FileLock again;
    CHECK(slm_file_lock(&again, at("x.safetensors"), &e) != 0); /* ours is live */
    unlink(at("y.safetensors"));
    CHECK(symlink("x.safetensors", at("y.safetensors")) == 0); /* by another name, the same lock */
    CHECK(slm_file_lock(&again, at("y.safetensors"), &e) != 0);
    slm_file_unlock(&l);
    put_text(at("x.safetensors.lock"), "Lily found a shell.\n");
    CHECK(slm_file_lock(&l, at("x.safetensors"), &e) != 0 && strstr(e.message, "not a lock"));
    char *kept = slurp(at("x.safetensors.lock"));
    CHECK(kept && strcmp(kept, "Lily found a shell.\n") == 0);
    free(kept);
}

/* A run that ended but was not yet collected by its parent (mpirun leaves a
 * stopped rank so for a moment) holds no lock: --resume must not wait on it. */
static void a_zombie_holds_no_lock(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    char text[32], state[512] = "";
    snprintf(text, sizeof text, "%ld\n", (long)pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    for (int i = 0; i < 200 && !strstr(state, ") Z"); i++) { /* until it is a zombie */
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(state, 1, sizeof state - 1, f) : 0;
        if (f) fclose(f);
        state[n] = '\0';
        if (!strstr(state, ") Z")) nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    CHECK(strstr(state, ") Z") != NULL);
    put_text(at("z.safetensors.lock"), text);
    FileLock l;
    Error e = {0};
    CHECK(slm_file_lock(&l, at("z.safetensors"), &e) == 0);
    slm_file_unlock(&l);
    waitpid(pid, NULL, 0);
}

/* A lock caught between its creation and its PID (flock()ed, still empty:
 * what another process's slm_file_lock holds for a moment) is a lock held,
 * never "not a lock"; once let go, the empty file is taken. */
static void a_lock_being_taken_is_a_lock(void) {
    unlink(at("t.safetensors.lock"));
    int fd = open(at("t.safetensors.lock"), O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0); /* another open file: it conflicts as another process's would */
    FileLock l;
    Error e = {0};
    CHECK(slm_file_lock(&l, at("t.safetensors"), &e) == 1);
    CHECK(strstr(e.message, "being written by another process") && !strstr(e.message, "not a lock"));
    struct stat st;
    CHECK(stat(at("t.safetensors.lock"), &st) == 0 && st.st_size == 0); /* left as it was */
    close(fd);
    CHECK(slm_file_lock(&l, at("t.safetensors"), &e) == 0);
    slm_file_unlock(&l);
    CHECK(stat(at("t.safetensors.lock"), &st) != 0);
}

/* Two plans that share a file (one run's moving average is the other's
 * model): while one holds its claims the other is refused and claims
 * nothing; a lock is no input. */
static void claims_refuse_a_second_writer(void) {
    OutputPlan a, b;
    OutputClaims ca, cb;
    Error e = {0};
    slm_outputs_init(&a, false);
    slm_outputs_write(&a, at("c.safetensors"), FILE_MODEL);
    slm_outputs_write(&a, at("c.ema.safetensors"), FILE_MODEL);
    slm_outputs_init(&b, false);
    slm_outputs_write(&b, at("c.ema.safetensors"), FILE_MODEL);
    slm_outputs_write(&b, at("c.ema.adam.safetensors"), FILE_MODEL);
    CHECK(slm_outputs_claim(&a, &ca, &e) == 0 && ca.n == 2);
    CHECK(slm_outputs_claim(&b, &cb, &e) == 1 && cb.n == 0 && strstr(e.message, "being written by another process"));
    struct stat st;
    CHECK(stat(at("c.ema.adam.safetensors.lock"), &st) != 0); /* nothing of b's left claimed */
    slm_outputs_release(&ca);
    CHECK(stat(at("c.safetensors.lock"), &st) != 0 && stat(at("c.ema.safetensors.lock"), &st) != 0);
    CHECK(slm_outputs_claim(&b, &cb, &e) == 0);
    slm_outputs_release(&cb);
    slm_outputs_release(&cb); /* twice: nothing more */
    put_text(at("d.safetensors.lock"), "");
    slm_outputs_init(&a, false);
    slm_outputs_read(&a, at("d.safetensors.lock"));
    slm_outputs_write(&a, at("d.safetensors"), FILE_MODEL);
    CHECK(slm_outputs_claim(&a, &ca, &e) < 0 && strstr(e.message, "same file as the lock"));
}

/* A file that must be new is never put over one, not even one that
 * appeared after its temporary was opened; another name may be tried. */
static void new_files_never_replace(void) {
    Error e = {0};
    unlink(at("n.txt")), unlink(at("n-2.txt"));
    CHECK(slm_file_write_new(at("n.txt"), "one\n", 4, &e) == 0);
    CHECK(slm_file_write_new(at("n.txt"), "two\n", 4, &e) != 0 && strstr(e.message, "not replaced"));
    AtomicFile a;
    CHECK(slm_atomic_open(&a, at("n.txt"), &e) == 0 && slm_atomic_write(&a, "three\n", 6, &e) == 0);
    CHECK(slm_atomic_commit_new(&a, NULL, &e) == 1);
    CHECK(slm_atomic_commit_new(&a, at("n-2.txt"), &e) == 0);
    char *one = slurp(at("n.txt")), *three = slurp(at("n-2.txt"));
    CHECK(one && strcmp(one, "one\n") == 0);
    CHECK(three && strcmp(three, "three\n") == 0);
    free(one), free(three);
}

static void numbers_never_wrap(void) {
    long long x = 0;
    int i = 0;
    double d = 0;
    CHECK(slm_parse_integer("4294967297", 0, 1999, &x) == PARSE_OUT_OF_RANGE);
    CHECK(slm_parse_integer("99999999999999999999999", LLONG_MIN, LLONG_MAX, &x) == PARSE_OUT_OF_RANGE);
    CHECK(slm_parse_int("2147483648", INT_MIN, INT_MAX, &i) == PARSE_OUT_OF_RANGE);
    CHECK(slm_parse_int(" 5", 0, 10, &i) == PARSE_NOT_NUMBER);
    CHECK(slm_parse_int("5x", 0, 10, &i) == PARSE_NOT_NUMBER);
    CHECK(slm_parse_int("", 0, 10, &i) == PARSE_NOT_NUMBER);
    CHECK(slm_parse_int("-3", -5, 10, &i) == PARSE_OK && i == -3);
    CHECK(slm_parse_double("nan", -1, 1, &d) != PARSE_OK);
    CHECK(slm_parse_double("1e999", 0, INFINITY, &d) == PARSE_OUT_OF_RANGE);
    CHECK(slm_parse_double("0.5", 0, 1, &d) == PARSE_OK && d == 0.5);
    const char *end;
    CHECK(slm_parse_integer_prefix("12 7", &end, 0, 100, &x) == PARSE_OK && x == 12 && *end == ' ');
}

static void typed_text_is_checked(void) {
    Error e = {0};
    CHECK(slm_text_check("Lily \xff", 6, "the text", &e) != 0 && strstr(e.message, "invalid UTF-8 at byte offset 5"));
    CHECK(slm_text_check("a\0b", 3, "the text", &e) != 0 && strstr(e.message, "NUL byte at byte offset 1"));
    CHECK(slm_text_check("Lily \xc3\xa9", 7, "the text", &e) == 0);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/outputs", check_tmpdir());
    mkdir(dir, 0755);
    char resolved[PATH_MAX];
    if (realpath(dir, resolved)) snprintf(dir, sizeof dir, "%s", resolved);
    kinds_are_told();
    an_input_is_never_an_output();
    existing_files_are_kept();
    families_are_checked();
    temporaries_never_follow_a_link();
    locks_are_stale_only_when_locks();
    a_zombie_holds_no_lock();
    a_lock_being_taken_is_a_lock();
    claims_refuse_a_second_writer();
    new_files_never_replace();
    numbers_never_wrap();
    typed_text_is_checked();
    return check_report();
}
