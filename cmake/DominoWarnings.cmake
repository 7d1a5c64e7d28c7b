# Warnings are errors in our own code only; third-party headers come in as SYSTEM.
# -Wno-restrict: GCC 12 reports false positives inside std::string at -O3 (GCC bug 105329).
function(domino_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Werror -Wno-missing-field-initializers -Wno-restrict>)
endfunction()
