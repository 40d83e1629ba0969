/* Output safety: see include/storylm/outputs.h. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "storylm/outputs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storylm/fileio.h"

#define DEFAULT_KEEP_HINT "give another output name, or --force to replace it"
#define SNIFF_BYTES 4096

/* ---- what a file holds -------------------------------------------------------- */

/* A safetensors file: 8 bytes of header length (little-endian), then '{'. */
static bool is_safetensors(const unsigned char *b, size_t n, uint64_t *header_len) {
    if (n < 10 || b[8] != '{') return false;
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--) h = h << 8 | b[i];
    *header_len = h;
    return h >= 2 && h < ((uint64_t)100 << 20);
}

static bool is_lock(const unsigned char *b, size_t n) {
    size_t digits = 0;
    while (digits < n && b[digits] >= '0' && b[digits] <= '9') digits++;
    return digits > 0 && digits < 20 && n == digits + 1 && b[digits] == '\n';
}

static bool starts_with_line(const char *s, const char *line) {
    size_t n = strlen(line);
    return strncmp(s, line, n) == 0 && (s[n] == '\n' || (s[n] == '\r' && s[n + 1] == '\n'));
}

/* Text (no NUL in the first bytes): a vocabulary, a picture or other text. */
static FileKind text_kind(const char *s) {
    if (starts_with_line(s, "[UNK]")) {
        const char *next = strchr(s, '\n');
        if (next && starts_with_line(next + 1, "[EOS]")) return FILE_VOCAB;
    }
    s += strspn(s, " \t\r\n");
    if (strncmp(s, "<svg", 4) == 0 || (strncmp(s, "<?xml", 5) == 0 && strstr(s, "<svg"))) return FILE_SVG;
    return FILE_TEXT;
}

/* Is "storylm-activations" in the header (its first 64 kB) of the open file? */
static bool header_says_activations(int fd, uint64_t header_len) {
    static const char mark[] = "storylm-activations";
    char buf[1 << 16];
    size_t want = header_len < sizeof buf - 1 ? (size_t)header_len : sizeof buf - 1;
    ssize_t n = pread(fd, buf, want, 8);
    if (n <= 0) return false;
    buf[n] = '\0';
    for (ssize_t i = 0; i + (ssize_t)sizeof mark - 1 <= n; i++)
        if (memcmp(buf + i, mark, sizeof mark - 1) == 0) return true;
    return false;
}

FileKind slm_file_kind(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return FILE_NONE;
    struct stat st;
    unsigned char b[SNIFF_BYTES + 1];
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, b, SNIFF_BYTES, 0) : -1;
    FileKind k = FILE_OTHER;
    uint64_t header_len;
    if (n == 0)
        k = FILE_NONE;
    else if (n < 0)
        k = FILE_OTHER;
    else if (is_safetensors(b, (size_t)n, &header_len))
        k = header_says_activations(fd, header_len) ? FILE_ACTIVATIONS : FILE_MODEL;
    else if (is_lock(b, (size_t)n))
        k = FILE_LOCK;
    else if (!memchr(b, 0, (size_t)n)) {
        b[n] = '\0';
        k = text_kind((const char *)b);
    }
    close(fd);
    return k;
}

const char *slm_file_kind_name(FileKind k) {
    static const char *const names[] = {
        "nothing", "a model (safetensors)",      "activations (storylm cache)", "a vocabulary", "a picture (SVG)",
        "a lock",  "text (stories, a table...)", "data of another kind"};
    return k >= FILE_NONE && k <= FILE_OTHER ? names[k] : "?";
}

/* ---- the plan ------------------------------------------------------------------ */

void slm_outputs_init(OutputPlan *p, bool force) { *p = (OutputPlan){.force = force}; }

void slm_outputs_read(OutputPlan *p, const char *path) {
    if (path && p->n_inputs < OUTPUTS_MAX) p->inputs[p->n_inputs++] = path;
}

static void add_output(OutputPlan *p, const char *path, FileKind kind, bool replace) {
    if (path && p->n_outputs < OUTPUTS_MAX) p->outputs[p->n_outputs++] = (PlannedOutput){path, kind, replace};
}

void slm_outputs_write(OutputPlan *p, const char *path, FileKind kind) {
    add_output(p, path, kind, kind != FILE_MODEL);
}

void slm_outputs_write_own(OutputPlan *p, const char *path, FileKind kind) { add_output(p, path, kind, true); }

void slm_outputs_family(OutputPlan *p, const char *stem, const char *suffix, FileKind kind, bool replace) {
    if (p->n_families < 4) p->families[p->n_families++] = (OutputFamily){stem, suffix, kind, replace};
}

/* ---- paths ----------------------------------------------------------------------- */

/* One file, known by its resolved path and (when it exists) its inode. */
typedef struct Known {
    char path[PATH_MAX];
    bool exists;
    dev_t dev;
    ino_t ino;
} Known;

static void know(Known *k, const char *path) {
    struct stat st;
    if (!slm_path_resolve(path, k->path, sizeof k->path)) snprintf(k->path, sizeof k->path, "%s", path);
    k->exists = stat(path, &st) == 0;
    k->dev = k->exists ? st.st_dev : 0;
    k->ino = k->exists ? st.st_ino : 0;
}

static bool same(const Known *a, const Known *b) {
    if (a->exists && b->exists) return a->dev == b->dev && a->ino == b->ino;
    return strcmp(a->path, b->path) == 0;
}

/* Is name STEM, then digits (and dots: "x.tmp.123.4"), then SUFFIX? */
static bool in_family(const char *name, const char *stem, const char *suffix) {
    size_t ls = strlen(stem), lx = strlen(suffix), n = strlen(name);
    if (n < ls + lx + 1 || strncmp(name, stem, ls) != 0 || strcmp(name + n - lx, suffix) != 0) return false;
    for (size_t i = ls; i < n - lx; i++)
        if (!strchr("0123456789.", name[i])) return false;
    return name[ls] >= '0' && name[ls] <= '9';
}

/* A family's stem resolved as a path ("x/m.step" -> "/abs/x/m.step"). */
static void resolve_stem(const char *stem, char *buf, size_t size) {
    if (!slm_path_resolve(stem, buf, size)) snprintf(buf, size, "%s", stem);
}

/* ---- the checks -------------------------------------------------------------------- */

/* An existing output of another kind than the command writes, kept unless --force. */
static int check_existing(const OutputPlan *p, const char *path, FileKind kind, bool replace, Error *e) {
    FileKind have = slm_file_kind(path);
    if (have == FILE_NONE || p->force || (replace && (have == kind || kind == FILE_NONE))) return 0;
    if (have == FILE_LOCK && kind == FILE_LOCK) return 0; /* slm_file_lock tells a live one from a stale one */
    return FAIL(e, p->keep_hint ? p->keep_hint : DEFAULT_KEEP_HINT, "'%s' already holds %s: it is not replaced", path,
                slm_file_kind_name(have));
}

/* Output i against the inputs, the outputs before it and the families. */
static int check_against(const OutputPlan *p, int i, const Known *in, const Known *out, Error *e) {
    const char *path = p->outputs[i].path;
    for (int j = 0; j < p->n_inputs; j++)
        if (same(&out[i], &in[j]))
            return FAIL(e, "give the output another name: writing it would destroy the input",
                        "the output '%s' is the same file as the input '%s'", path, p->inputs[j]);
    for (int j = 0; j < i; j++)
        if (same(&out[i], &out[j]))
            return FAIL(e, "give each output its own name", "'%s' would be written twice (also as '%s')", path,
                        p->outputs[j].path);
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%.*s.tmp.", PATH_MAX - 1, out[i].path);
    for (int j = 0; j < p->n_inputs; j++)
        if (in_family(in[j].path, tmp, ""))
            return FAIL(e, "rename the input: files named like an output's temporaries are removed",
                        "the input '%s' is named like a temporary file of the output '%s'", p->inputs[j], path);
    return 0;
}

/* No input is a member of a family, and no existing member is kept unless replaceable. */
static int check_family(const OutputPlan *p, const OutputFamily *f, const Known *in, Error *e) {
    char stem[PATH_MAX];
    resolve_stem(f->stem, stem, sizeof stem);
    for (int j = 0; j < p->n_inputs; j++)
        if (in_family(in[j].path, stem, f->suffix))
            return FAIL(e, "rename the input, or give the output another name",
                        "the input '%s' is named like a file this command writes (%sN%s)", p->inputs[j], f->stem,
                        f->suffix);
    if (p->force) return 0;
    char folder[PATH_MAX];
    const char *slash = strrchr(stem, '/'), *name = slash + 1;
    snprintf(folder, sizeof folder, "%.*s", slash == stem ? 1 : (int)(slash - stem), stem);
    DIR *d = opendir(folder);
    struct dirent *de;
    int rc = 0;
    while (d && !rc && (de = readdir(d))) {
        char full[PATH_MAX + 256];
        snprintf(full, sizeof full, "%s/%s", folder, de->d_name);
        if (in_family(de->d_name, name, f->suffix) && slm_file_kind(full) != FILE_NONE)
            rc = check_existing(p, full, f->kind, f->replace, e);
    }
    if (d) closedir(d);
    return rc;
}

/* The lock of output i (when claimed) is no input and no other output. */
static int check_lock(const OutputPlan *p, int i, const Known *in, const Known *out, Error *e) {
    Known lock;
    char *lock_path = slm_file_lock_path(p->outputs[i].path, e);
    if (!lock_path) return -1;
    know(&lock, lock_path);
    free(lock_path);
    for (int j = 0; j < p->n_inputs; j++)
        if (same(&lock, &in[j]))
            return FAIL(e, "give the input another name: a run claims each file it writes with a lock, FILE.lock",
                        "the input '%s' is the same file as the lock of the output '%s'", p->inputs[j],
                        p->outputs[i].path);
    for (int j = 0; j < p->n_outputs; j++)
        if (same(&lock, &out[j]))
            return FAIL(e, "give each output its own name", "'%s' would be written twice (also as the lock of '%s')",
                        p->outputs[j].path, p->outputs[i].path);
    return 0;
}

int slm_outputs_check(const OutputPlan *p, Error *e) {
    Known in[OUTPUTS_MAX], out[OUTPUTS_MAX];
    for (int j = 0; j < p->n_inputs; j++) know(&in[j], p->inputs[j]);
    for (int i = 0; i < p->n_outputs; i++) {
        const PlannedOutput *o = &p->outputs[i];
        if (slm_output_check(o->path, NULL, 0, e)) return -1; /* a folder, a device, a link to nothing... */
        know(&out[i], o->path);
        if (check_against(p, i, in, out, e) || check_existing(p, o->path, o->kind, o->replace, e)) return -1;
    }
    for (int i = 0; i < p->n_outputs && p->claim; i++)
        if (check_lock(p, i, in, out, e)) return -1;
    /* no input, and no other output, is named like a member of a family */
    OutputPlan others = *p;
    others.n_inputs = p->n_outputs;
    for (int i = 0; i < p->n_outputs; i++) others.inputs[i] = p->outputs[i].path;
    others.force = true; /* the outputs' own contents were checked above */
    for (int f = 0; f < p->n_families; f++)
        if (check_family(p, &p->families[f], in, e) || check_family(&others, &p->families[f], out, e)) return -1;
    return 0;
}

/* ---- claims --------------------------------------------------------------------- */

void slm_outputs_release(OutputClaims *c) {
    for (int i = c->n - 1; i >= 0; i--) slm_file_unlock(&c->locks[i]);
    c->n = 0;
}

int slm_outputs_claim(OutputPlan *p, OutputClaims *c, Error *e) {
    *c = (OutputClaims){0};
    p->claim = true;
    if (slm_outputs_check(p, e)) return -1;
    int rc = 0;
    for (int i = 0; i < p->n_outputs && !rc; i++)
        if (!(rc = slm_file_lock(&c->locks[c->n], p->outputs[i].path, e))) c->n++;
    /* again, under the locks: a run that ended between the check and the
     * claims may have left a file there */
    if (!rc) rc = slm_outputs_check(p, e);
    if (rc) slm_outputs_release(c);
    return rc;
}
