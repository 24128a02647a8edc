#include "cli/commands.h"

namespace pagoda::cli {
namespace {
int g_exit_code = 0;  // written once by the command that ran, read by main()
}  // namespace

void set_exit_code(int code) { g_exit_code = code; }
int exit_code() { return g_exit_code; }

}  // namespace pagoda::cli
