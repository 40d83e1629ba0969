/* Output safety: no verb ever destroys a file. Every file a verb writes (its
 * output, the files it writes beside it, their temporaries, its lock) is
 * checked before anything is written: against every file it reads (the same
 * inode, or the same path once links and ".." are resolved), against the
 * other files it writes, and against what an existing file holds: a file is
 * replaced only when it is empty or of the kind the verb writes (a picture
 * over a picture), never a model or a stories file unless the user says
 * --force. docs/files.md says it for users. */
#ifndef STORYLM_OUTPUTS_H
#define STORYLM_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>

#include "storylm/error.h"
#include "storylm/fileio.h"

/* --force's help, the same in every verb that writes files. */
#define OUTPUTS_FORCE_HELP "replace an output file that holds a model, stories or other data (kept otherwise)"

/* What a file holds, read from its first bytes. */
typedef enum FileKind {
    FILE_NONE,        /* absent or empty: nothing to lose */
    FILE_MODEL,       /* safetensors: a model, its optimizer state, a snapshot */
    FILE_ACTIVATIONS, /* safetensors of storylm cache ("format": "storylm-activations") */
    FILE_VOCAB,       /* a vocabulary: "[UNK]" then "[EOS]", one piece a line */
    FILE_SVG,         /* a picture */
    FILE_LOCK,        /* a lock of slm_file_lock: a PID and a newline, nothing else */
    FILE_TEXT,        /* any other text: stories, a table */
    FILE_OTHER,       /* anything else */
} FileKind;

FileKind slm_file_kind(const char *path);
const char *slm_file_kind_name(FileKind k); /* "a model", "text (stories?)", ... */

#define OUTPUTS_MAX 16

/* Files named STEM + digits + SUFFIX that a verb writes as it goes
 * (OUT.step1200.safetensors), their number not known before. */
typedef struct OutputFamily {
    const char *stem, *suffix;
    FileKind kind;
    bool replace; /* an existing member of kind may be replaced (a resumed run's own) */
} OutputFamily;

typedef struct PlannedOutput {
    const char *path;
    FileKind kind;
    bool replace; /* an existing file of kind may be replaced without --force */
} PlannedOutput;

/* What one command reads and writes; paths are borrowed, not copied. */
typedef struct OutputPlan {
    const char *inputs[OUTPUTS_MAX];
    int n_inputs;
    PlannedOutput outputs[OUTPUTS_MAX];
    int n_outputs;
    OutputFamily families[4];
    int n_families;
    bool force;            /* --force: an existing file of another kind may be replaced */
    bool claim;            /* the outputs are claimed (slm_outputs_claim): each one's lock is an output too */
    const char *keep_hint; /* the hint when an existing file is kept (NULL: "--force to replace it") */
} OutputPlan;

void slm_outputs_init(OutputPlan *p, bool force);
/* A file the command reads (NULL is skipped). */
void slm_outputs_read(OutputPlan *p, const char *path);
/* A file the command writes (NULL is skipped), with its temporaries
 * (PATH.tmp.*). An existing file of the same kind is replaced, except a model,
 * which only slm_outputs_write_own replaces without --force. */
void slm_outputs_write(OutputPlan *p, const char *path, FileKind kind);
/* The same, where an existing file of kind is the command's own to replace
 * (train --resume: its moving average); kind FILE_NONE: whatever it holds, a
 * file the command reads back and judges itself (train --resume: its model
 * and optimizer state, whose loader says what is wrong with them). */
void slm_outputs_write_own(OutputPlan *p, const char *path, FileKind kind);
/* Files STEM<digits>SUFFIX the command may write (train's snapshots). */
void slm_outputs_family(OutputPlan *p, const char *stem, const char *suffix, FileKind kind, bool replace);

/* Checks the plan before any work: each output can be written (a regular file
 * or none, not a link to nothing, its folder writable); is no input, nor a
 * member of a family or a temporary of another output that is an input; is
 * named once; and any existing file is one the command may replace. */
int slm_outputs_check(const OutputPlan *p, Error *e);

/* The claims of a plan's outputs: a lock each (slm_file_lock). */
typedef struct OutputClaims {
    FileLock locks[OUTPUTS_MAX];
    int n;
} OutputClaims;

/* Checks the plan, claims every output with its lock (PATH.lock), held
 * until slm_outputs_release, and checks again under the locks: while they
 * are held no other run, of the CLI or a server, writes one of the files,
 * and what is there is what the check saw. No input may be one of the locks.
 * Returns 0 with every file claimed, or nothing claimed and 1 when another
 * process holds one (slm_file_lock), -1 on any other refusal. */
int slm_outputs_claim(OutputPlan *p, OutputClaims *c, Error *e);
void slm_outputs_release(OutputClaims *c); /* removes the locks; c may be released twice */

#endif
