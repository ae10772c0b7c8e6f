# Writes the .java files under DIR, one quoted path a line, to OUT: a javac
# argument file for sources whose names are only known after SWIG ran.
file(GLOB_RECURSE _sources "${DIR}/*.java")
list(SORT _sources)
set(_text "")
foreach(_f IN LISTS _sources)
  string(APPEND _text "\"${_f}\"\n")
endforeach()
file(WRITE "${OUT}.tmp" "${_text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
