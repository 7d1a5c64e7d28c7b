# The headers a set of public headers brings with it: every project header they include, and
# what those include in turn, each with the path it must have below the installed include
# directory for the installed includes to find it as the build's do.
#
# domino_header_closure(<out> HEADERS <file>... ROOTS <source dir> <installed dir>...)
#   ROOTS pairs each include directory of the build with where its files go once installed
#   ("." for the include directory itself), in the order the compiler searches them. A public
#   header is installed below the first root that holds it. #include "x" looks next to the
#   including file first, as the compiler does; any include that no root holds (torch, the
#   standard library) is left to the consumer's own include path.
#   <out> is a list of <source file>|<installed path> entries; every file read is a configure
#   dependency, so an include added to any of them re-runs CMake and with it this list.
function(domino_header_closure out)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "HEADERS;ROOTS")
  set(sources "")
  set(installed "")
  list(LENGTH arg_ROOTS count)
  math(EXPR last "${count} - 1")

  # A public header's installed path: its path below the first root that holds it.
  set(pending "")
  foreach(header IN LISTS arg_HEADERS)
    set(found "")
    foreach(i RANGE 0 ${last} 2)
      math(EXPR j "${i} + 1")
      list(GET arg_ROOTS ${i} root)
      list(GET arg_ROOTS ${j} destination)
      cmake_path(IS_PREFIX root "${header}" NORMALIZE inside)
      if(inside)
        cmake_path(RELATIVE_PATH header BASE_DIRECTORY "${root}" OUTPUT_VARIABLE below)
        cmake_path(APPEND destination "${below}" OUTPUT_VARIABLE found)
        break()
      endif()
    endforeach()
    if(found STREQUAL "")
      message(FATAL_ERROR "domino_header_closure: ${header} lies under none of the roots")
    endif()
    list(APPEND pending "${header}|${found}")
  endforeach()

  while(pending)
    list(POP_FRONT pending entry)
    string(REPLACE "|" ";" pair "${entry}")
    list(GET pair 0 file)
    list(GET pair 1 path)
    cmake_path(NORMAL_PATH path)
    if(path MATCHES "^\\.\\./" OR IS_ABSOLUTE "${path}")
      message(FATAL_ERROR "domino_header_closure: ${file} would be installed at ${path}, outside "
                          "the include directory; include it by a path below an include root")
    endif()
    list(FIND installed "${path}" seen)
    if(NOT seen EQUAL -1)
      list(GET sources ${seen} other)
      file(REAL_PATH "${file}" real)
      file(REAL_PATH "${other}" real_other)
      if(NOT real STREQUAL real_other)
        message(FATAL_ERROR "domino_header_closure: ${file} and ${other} would both be "
                            "installed as ${path}; rename one of them")
      endif()
      continue()
    endif()
    list(APPEND sources "${file}")
    list(APPEND installed "${path}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")

    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"][^>\"]+[>\"]")
    cmake_path(GET file PARENT_PATH here)
    cmake_path(GET path PARENT_PATH here_installed)
    foreach(line IN LISTS lines)
      string(REGEX MATCH "[<\"]([^>\"]+)([>\"])" _ "${line}")
      set(name "${CMAKE_MATCH_1}")
      set(next "")
      if(CMAKE_MATCH_2 STREQUAL "\"" AND EXISTS "${here}/${name}"
         AND NOT IS_DIRECTORY "${here}/${name}")
        cmake_path(APPEND here_installed "${name}" OUTPUT_VARIABLE beside)
        set(next "${here}/${name}|${beside}")
      else()
        foreach(i RANGE 0 ${last} 2)
          math(EXPR j "${i} + 1")
          list(GET arg_ROOTS ${i} root)
          list(GET arg_ROOTS ${j} destination)
          if(EXISTS "${root}/${name}" AND NOT IS_DIRECTORY "${root}/${name}")
            set(next "${root}/${name}|${destination}/${name}")
            break()
          endif()
        endforeach()
      endif()
      if(next)
        list(APPEND pending "${next}")
      endif()
    endforeach()
  endwhile()

  set(result "")
  foreach(file path IN ZIP_LISTS sources installed)
    list(APPEND result "${file}|${path}")
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()
