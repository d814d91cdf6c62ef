/* tokscope entry point: dispatch to a subcommand, or start the TUI. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "signals.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} subcommands[] = {
    {"info", cmd_info, "info MODEL                      describe a GGUF file (metadata, tensors)"},
    {"tokenize", cmd_tokenize, "tokenize -m MODEL [--no-bos] [--special] [--cases FILE.inp]"},
    {"generate", cmd_generate, "generate -m MODEL -p PROMPT [-n N] [--temp T] [--chat] ..."},
    {"logits", cmd_logits, "logits -m MODEL (-p PROMPT | --tokens 1,2,3) [-n N] [-k K] ..."},
    {"compare", cmd_compare, "compare -m MODEL GOLDEN.jsonl [--one-by-one] [--batch B]"},
    {"template", cmd_template, "template [-m MODEL | --template FILE.jinja] MESSAGES.json"},
    {"bench", cmd_bench, "bench -m MODEL [-p N] [-n N] [-r REPS] [-t THREADS]"},
    {"serve", cmd_serve, "serve -m MODEL [--host ADDR] [--port N] [--api-key-file F]"},
    {"pull", cmd_pull, "pull REPO[:QUANT] | URL [-o DIR]  download a GGUF from a Hugging Face hub"},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tokscope [-m MODEL] [options]      open the chat TUI (model picker without -m)\n"
            "       tokscope --remote URL [options]    the same TUI on an OpenAI-compatible server (llama-server,\n"
            "                                          vLLM, ollama, tokscope serve; see --remote URL --help)\n"
            "       tokscope SUBCOMMAND [args]         run a subcommand (SUBCOMMAND --help for its options)\n"
            "       tokscope --print-config [options]  the merged configuration, each value's source\n"
            "       tokscope --help | --version\n\nsubcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(f, "  %s\n", subcommands[i].help);
    fprintf(f, "\nTUI options: see `tokscope -m MODEL --help` and man tokscope(1).\n");
}

int main(int argc, char **argv)
{
    signals_install();
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
        printf("tokscope %s\n", TOKSCOPE_VERSION);
        return 0;
    }
    if (argc >= 2)
        for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
            if (!strcmp(argv[1], subcommands[i].name))
                return subcommands[i].fn(argc - 1, argv + 1);
    if (argc >= 2 && argv[1][0] != '-') {
        fprintf(stderr, "tokscope: unknown subcommand '%s' (try tokscope --help)\n", argv[1]);
        return 2;
    }
    return cmd_tui(argc, argv);
}
