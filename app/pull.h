/* `tokscope pull`: models from a Hugging Face hub (or any URL) into the
 * models directory the picker reads.
 *
 * The pieces, each testable on its own:
 * - pull_spec_parse: "owner/repo[:QUANT|:FILE.gguf]" or an http(s) URL;
 * - pull_pick: which files of the repo's tree (the hub's
 *   /api/models/REPO/tree/main listing) a spec means: the .gguf whose name
 *   carries QUANT as a whole word (Q4_K does not pick Q4_K_M), every part of a
 *   split model (-00001-of-00003.gguf), mmproj files left out; with no
 *   QUANT, Q4_K_M as llama-cli -hf does, or the only model there is;
 * - pull_fetch_*: HTTP through libcurl (resume with Range, the sha256 the hub
 *   publishes checked before the file gets its final name). */
#ifndef TOKSCOPE_APP_PULL_H
#define TOKSCOPE_APP_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pull_spec {
    bool is_url;
    char repo[256];  /* owner/name */
    char quant[128]; /* after ':' ("" = default); a name ending in .gguf picks that file */
    char url[2048];  /* is_url */
} pull_spec;

/* 0 ok; -1 with a message in err. */
int pull_spec_parse(const char *s, pull_spec *spec, char *err, size_t errlen);

typedef struct pull_file {
    char path[512];  /* in the repo ("sub/x-Q4_K_M.gguf") */
    uint64_t size;   /* 0 = not listed */
    char sha256[65]; /* the LFS oid, "" when the listing has none */
} pull_file;

/* Picks from the tree listing (a JSON array of {type, path, size, lfs{oid}}).
 * Fills files (at most cap), returns how many; -1 with a message (no match,
 * several candidates named, a split set with parts missing, bad JSON). */
int pull_pick(const char *tree_json, const char *quant, pull_file *files, int cap, char *err, size_t errlen);

/* True when name has quant as a whole word, case-insensitive (the
 * characters around it are none of [A-Za-z0-9_]). */
bool pull_name_has_quant(const char *name, const char *quant);

/* Split parts: "x-00002-of-00003.gguf" -> part 2 of 3, the prefix length
 * ("x" = 1); false for other names. */
bool pull_split_part(const char *name, int *part, int *count, size_t *prefix_len);

/* ---- network (pull_fetch.c) ---- */

typedef struct pull_net {
    const char *endpoint; /* "https://huggingface.co" or $HF_ENDPOINT, no trailing '/' */
    const char *token;    /* $HF_TOKEN, NULL = none */
    long stall_seconds;   /* give up when no byte came for this long */
    bool progress;        /* draw the progress bar on stderr */
} pull_net;

/* GETs url into a malloc'd NUL-terminated body. 0 ok; -1 with a message
 * naming the status (401: say HF_TOKEN, 404: not found). */
int pull_fetch_text(const pull_net *net, const char *url, char **body, char *err, size_t errlen);

/* Downloads url to dest: bytes go to dest + ".part" (resumed from its length
 * with a Range request when it exists), are checked against sha256 (the
 * expected hex, or "" to take the X-Linked-ETag the server sends, or none),
 * then renamed to dest. 0 ok; -1 with a message; the .part file stays for a
 * later resume unless its content is known to be wrong (checksum mismatch). */
int pull_fetch_file(const pull_net *net, const char *url, const char *dest, uint64_t size,
                    const char *sha256, char *err, size_t errlen);

#endif
