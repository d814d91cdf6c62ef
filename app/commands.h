/* Subcommands of the tokscope binary. Each takes argv with argv[0] = the
 * subcommand name and returns the process exit status. */
#ifndef TOKSCOPE_COMMANDS_H
#define TOKSCOPE_COMMANDS_H

#define TOKSCOPE_VERSION "0.1.0"

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
/* The TUI: `tokscope [-m MODEL] [options]`; argv[0] is the program name. */
int cmd_tui(int argc, char **argv);

#endif
