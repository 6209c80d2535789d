#pragma once
// Result objects for Python: their read-only fields, and their dict form, which is the JSON
// form the library writes once (to_json, the schema the CLI prints) read back by json.loads,
// never a second copy of the schema.

#include <string>
#include <utility>

#include "common.hpp"

namespace pathlift::python {

/// json.loads(text): a result's JSON form as Python dicts, lists, numbers and None.
inline py::object from_json(const std::string& text) {
  return py::module_::import("json").attr("loads")(text);
}

/// Binds `to_dict()` on a result class: from_json(to_json(result, -1)).
template <class T, class... Options>
void def_to_dict(py::class_<T, Options...>& cls, const char* doc) {
  cls.def(
      "to_dict", [](const T& result) { return from_json(to_json(result, -1)); }, doc);
}

/// A read-only attribute of a result struct: name, member, docstring (def_fields).
template <class T, class Member>
struct Field {
  const char* name;
  Member T::*member;
  const char* doc;
};

template <class T, class Member>
Field<T, Member> field(const char* name, Member T::*member, const char* doc) {
  return {name, member, doc};
}

/// Binds each field as a read-only attribute:
/// def_fields(cls, field("n", &Check::n, "Samples."), field("q", &Check::q, "Outputs.")).
template <class Class, class... Fields>
void def_fields(Class& cls, const Fields&... fields) {
  (cls.def_readonly(fields.name, fields.member, fields.doc), ...);
}

}  // namespace pathlift::python
