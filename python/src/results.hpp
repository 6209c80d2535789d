#pragma once
// Result objects for Python: their read-only fields, and their dict form, which is the JSON
// form the library writes once (to_json, the schema the CLI prints) read back by json.loads,
// never a second copy of the schema.

#include <string>
#include <utility>
#include <vector>

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

/// A std::vector member of a result struct read as a numpy array of its element type, a fresh
/// copy on each access (writing to it never changes the result) (def_fields).
template <class T, class Member>
struct ArrayField : Field<T, Member> {};

template <class T, class V>
ArrayField<T, std::vector<V>> array_field(const char* name, std::vector<V> T::*member,
                                          const char* doc) {
  return {{name, member, doc}};
}

template <class Class, class T, class Member>
void def_field(Class& cls, const Field<T, Member>& f) {
  cls.def_readonly(f.name, f.member, f.doc);
}

template <class Class, class T, class Member>
void def_field(Class& cls, const ArrayField<T, Member>& f) {
  cls.def_property_readonly(
      f.name, [member = f.member](const T& r) { return owning_array(Member(r.*member)); }, f.doc);
}

/// Binds each field as a read-only attribute, in order:
/// def_fields(cls, field("n", &Check::n, "Samples."), array_field("x", &Check::x, "Inputs.")).
template <class Class, class... Fields>
void def_fields(Class& cls, const Fields&... fields) {
  (def_field(cls, fields), ...);
}

}  // namespace pathlift::python
