// picketctl entry point: everything lives in picket_cli (manager/cli/picketctl.h).
#include <iostream>

#include "manager/cli/picketctl.h"

int main(int argc, char** argv) {
    return picket::manager::cli::run(argc, argv, std::cout, std::cerr);
}
