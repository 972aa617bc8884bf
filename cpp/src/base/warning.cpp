#include "ringfire/base/warning.h"

#include <atomic>
#include <cstdio>

namespace ringfire {

namespace {

void print_warning(const std::string& message) { std::fprintf(stderr, "ringfire warning: %s\n", message.c_str()); }

std::atomic<WarningHandler> g_handler{&print_warning};

}  // namespace

void set_warning_handler(WarningHandler handler) { g_handler.store(handler == nullptr ? &print_warning : handler); }

void warn(const std::string& message) { g_handler.load()(message); }

}  // namespace ringfire
