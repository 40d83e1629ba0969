/* The registry: the one list of architectures, one line each (see
 * include/storylm/arch.h). The only place that names every architecture. */
#include <stdio.h>
#include <string.h>

#include "storylm/arch.h"

extern const Architecture slm_attention_arch, slm_window8_arch, slm_transformer_arch, slm_attn_only_arch;

static const Architecture *const architectures[] = {
    &slm_attention_arch,   /* the chapter's network (the default): any number of layers, every variant */
    &slm_window8_arch,     /* chapter 6's baseline: the last 8 rows, no heads */
    &slm_transformer_arch, /* pre-LN blocks in TransformerLens's names */
    &slm_attn_only_arch,   /* the transformer's blocks without their MLP (TransformerLens's attn_only) */
};
#define N_ARCHS ((int)(sizeof architectures / sizeof architectures[0]))

int slm_arch_count(void) { return N_ARCHS; }

const Architecture *slm_arch_at(int i) { return i >= 0 && i < N_ARCHS ? architectures[i] : NULL; }

const Architecture *slm_arch_default(void) { return architectures[0]; }

/* What goes before name i of a list: "a, b or c". */
static const char *separator(int i) { return i == 0 ? "" : i + 1 < N_ARCHS ? ", " : " or "; }

void slm_arch_names(char *buf, size_t size) {
    buf[0] = '\0';
    for (int i = 0, used = 0; i < N_ARCHS && used >= 0 && (size_t)used < size; i++)
        used += snprintf(buf + used, size - (size_t)used, "%s%s", separator(i), architectures[i]->name);
}

void slm_arch_help(char *buf, size_t size) {
    buf[0] = '\0';
    for (int i = 0, used = 0; i < N_ARCHS && used >= 0 && (size_t)used < size; i++)
        used += snprintf(buf + used, size - (size_t)used, "%s%s (%s)", separator(i), architectures[i]->name,
                         architectures[i]->summary);
}

const Architecture *slm_arch_find(const char *name, Error *e) {
    for (int i = 0; name && i < N_ARCHS; i++)
        if (strcmp(name, architectures[i]->name) == 0) return architectures[i];
    char names[256], hint[300];
    slm_arch_names(names, sizeof names);
    snprintf(hint, sizeof hint, "use %s", names);
    FAIL(e, hint, "unknown architecture '%s'", name ? name : "(none)");
    return NULL;
}
