/* Fatal signals that bad input can cause, turned into a message: SIGBUS
 * from a model file that is truncated (or rewritten in place) while tokscope
 * has it mapped. The handler names the file, puts the terminal back if the
 * TUI had it, and exits with status 1 instead of dying with a core dump. */
#ifndef TOKSCOPE_APP_SIGNALS_H
#define TOKSCOPE_APP_SIGNALS_H

void signals_install(void);
/* The terminal's state before the TUI changes it; the handler restores it
 * (and leaves the alternate screen) before printing. */
void signals_save_terminal(void);

#endif
