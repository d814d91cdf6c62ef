/* Model picker: finds GGUF files in the usual places and lets the user
 * choose one. Searched: ./models, ~/models, configured directories, the
 * Hugging Face hub cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub),
 * LM Studio (~/.lmstudio/models, ~/.cache/lm-studio/models) and ollama's blob
 * store ($OLLAMA_MODELS/blobs, ~/.ollama/models/blobs; blobs have no
 * extension, so there the GGUF magic decides). Size, architecture and
 * quantization come from each file's header. */
#ifndef TOKSCOPE_UI_PICKER_H
#define TOKSCOPE_UI_PICKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct picker_entry {
    char *path;
    char *name;      /* file name, or general.name for extensionless blobs */
    const char *source; /* "models", "huggingface", "lmstudio", "ollama", "config" */
    uint64_t size;
    char arch[32];
    char quant[32];
} picker_entry;

typedef struct picker_dir {
    char path[4096];
    const char *source;
    int magic_only; /* list files without the .gguf extension when their magic says GGUF */
} picker_dir;

/* Fills dirs with the search locations (extra ones first); returns the count. */
size_t picker_dirs(const char *const *extra, size_t n_extra, picker_dir *dirs, size_t cap);
/* Scans the directories (recursively, bounded) and reads every header.
 * Returns the number of entries (*out malloc'd, sorted by name). */
size_t picker_scan(const picker_dir *dirs, size_t n_dirs, picker_entry **out);
void picker_free(picker_entry *e, size_t n);
/* Runs the picker screen (ncurses must be initialised). Returns the chosen
 * path (malloc'd) or NULL when the user quits. */
char *picker_run(const char *const *extra, size_t n_extra);
/* The same, with a first row offering to resume the last conversation
 * (offer: its description, NULL for none). Choosing it sets *resume and
 * returns NULL. */
char *picker_run_offer(const char *const *extra, size_t n_extra, const char *offer, bool *resume);

#endif
