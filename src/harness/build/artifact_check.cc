#include "harness/build/artifact_check.h"

#include <algorithm>

#include "harness/checks/symbols.h"

namespace solbench::harness::build_internal {

void inspect_artifact(BuildResult& result) {
  try {
    ElfSymbols syms = read_elf_symbols(result.so_path);
    result.abi_symbol = std::binary_search(syms.exported.begin(), syms.exported.end(),
                                           std::string("sb_abi_version"));
    result.import_violations = check_imports(syms, ImportPolicy::defaults());
  } catch (const ElfError& e) {
    result.import_violations = {{"<elf>", "<elf>", e.what(), RuleAction::Deny}};
  }
}

std::optional<std::string> entry_export_error(const std::filesystem::path& so, const std::string& entry) {
  try {
    ElfSymbols syms = read_elf_symbols(so);
    if (!std::binary_search(syms.exported.begin(), syms.exported.end(), entry))
      return "spec.entry_point: the built library does not export '" + entry +
             "' (declare it with SB_EXPORT from solbench/kernel.h, i.e. extern \"C\" and "
             "default visibility)";
  } catch (const ElfError& e) {
    return std::string("cannot read the built library: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace solbench::harness::build_internal
