"""Hand-written contexts, one per corner of the reference engine (flagsmith-flag-engine 11.1.1:
the context and result shapes, segment rules and operators in `flag_engine/segments/evaluator.py`,
Python's `str()`/`int()`/`float()`, override precedence and multivariate splits, and the inputs
on which it raises).

Each case is ``Case(id, ctx, expect)``. ``expect`` states what the reference is believed to do
(it is checked against the reference too, so a case that stops exercising its corner is noticed):

- ``"match"`` / ``"nomatch"``: whether segment ``s`` (the single segment of ``cond_ctx``) matched;
- ``"error"`` / ``"ok"``: whether the reference raises;
- a callable taking the reference's result and returning a bool;
- ``None``: no expectation, only reference == CLI.
"""

from __future__ import annotations

from typing import Any, Callable

from flag_engine.utils.hashing import get_hashed_percentage_for_object_ids

from corner_kit import (BAD, CASES, ENV, F, T, add, c, cond, feature, find_identifier, ident, rules_ctx,
                        seg_names)

# The list the cases below are added to (`corner_kit.add`), in the order written here.
__all__ = ["CASES"]

# =============================================================================================
# 3 / 5.1: identity, enrichment
# =============================================================================================
c("identity_empty_object_is_no_identity", None, "", "PERCENTAGE_SPLIT", "100", "nomatch", identity={})
c("identity_null_is_no_identity", None, "", "PERCENTAGE_SPLIT", "100", "nomatch", identity=None)
c("identity_absent", None, "$.identity.identifier", "IS_NOT_SET", None, "match", identity="absent")
c("identity_with_identifier_only_percentage_100", None, "", "PERCENTAGE_SPLIT", "100", "match",
  identity={"identifier": "u"})
c("enriched_key_missing", {}, "$.identity.key", "EQUAL", "env_user-1", "match")
c("enriched_key_null", None, "$.identity.key", "EQUAL", "env_user-1", "match",
  identity=ident(key=None))
c("enriched_key_empty_string", None, "$.identity.key", "EQUAL", "env_user-1", "match",
  identity=ident(key=""))
c("explicit_key_kept", None, "$.identity.key", "EQUAL", "abc", "match", identity=ident(key="abc"))
c("explicit_key_007_coerced_in_007_false", None, "$.identity.key", "IN", "007", "nomatch",
  identity=ident(key="007"))
c("explicit_key_007_coerced_in_7_true", None, "$.identity.key", "IN", "7", "match",
  identity=ident(key="007"))
c("identifier_007_in_007_false", {}, "$.identity.identifier", "IN", "007", "nomatch",
  identity=ident(identifier="007"))
c("identifier_007_in_7_true", {}, "$.identity.identifier", "IN", "7", "match",
  identity=ident(identifier="007"))
c("identifier_007_equal_007_true", {}, "$.identity.identifier", "EQUAL", "007", "match",
  identity=ident(identifier="007"))
c("empty_env_key_enrichment", {}, "$.identity.key", "EQUAL", "_user-1", "match",
  env={"key": "", "name": "n"})
c("unicode_identifier_key", {}, "$.identity.key", "EQUAL", "env_ünïcödé", "match",
  identity=ident(identifier="ünïcödé"))
c("traits_null", None, "x", "IS_NOT_SET", None, "match", identity=ident(traits=None))
c("no_traits_key", None, "x", "IS_SET", None, "nomatch", identity=ident())

# =============================================================================================
# 5.2: rules
# =============================================================================================
add("segment_empty_rules_never_matches", rules_ctx([]), lambda r: seg_names(r) == [])
for rt in ("ALL", "ANY", "NONE"):
    add(f"rule_{rt}_without_conditions_or_rules_matches", rules_ctx([{"type": rt}]), lambda r: seg_names(r) == ["s"])
    add(f"rule_{rt}_empty_lists_matches", rules_ctx([{"type": rt, "conditions": [], "rules": []}]),
        lambda r: seg_names(r) == ["s"])
add("any_conditions_T_subrules_F_nomatch",
    rules_ctx([{"type": "ANY", "conditions": [T], "rules": [{"type": "ALL", "conditions": [F]}]}]),
    lambda r: seg_names(r) == [])
add("none_conditions_F_subrules_T_nomatch",
    rules_ctx([{"type": "NONE", "conditions": [F], "rules": [{"type": "ALL", "conditions": [T]}]}]),
    lambda r: seg_names(r) == [])
add("none_conditions_F_F_matches", rules_ctx([{"type": "NONE", "conditions": [F, F]}]),
    lambda r: seg_names(r) == ["s"])
add("none_subrules_use_own_type",
    rules_ctx([{"type": "NONE", "rules": [{"type": "ALL", "conditions": [F]}, {"type": "ANY", "conditions": [F, F]}]}]),
    lambda r: seg_names(r) == ["s"])
add("any_subrules_any_true",
    rules_ctx([{"type": "ANY", "rules": [{"type": "ALL", "conditions": [F]}, {"type": "ALL", "conditions": [T]}]}]),
    lambda r: seg_names(r) == ["s"])
add("all_two_toplevel_rules_one_false",
    rules_ctx([{"type": "ALL", "conditions": [T]}, {"type": "ANY", "conditions": [F]}]),
    lambda r: seg_names(r) == [])
add("nested_depth_3", rules_ctx([{"type": "ALL", "rules": [{"type": "ANY", "rules": [
    {"type": "NONE", "conditions": [F]}]}]}]), lambda r: seg_names(r) == ["s"])
add("unknown_rule_type_empty_matches", rules_ctx([{"type": "SOME"}]), lambda r: seg_names(r) == ["s"])
add("unknown_rule_type_with_conditions_raises", rules_ctx([{"type": "SOME", "conditions": [T]}]), "error")
add("lowercase_rule_type_raises", rules_ctx([{"type": "all", "conditions": [T]}]), "error")
add("subrules_evaluated_even_if_conditions_failed",
    rules_ctx([{"type": "ALL", "conditions": [F], "rules": [{"type": "ALL", "conditions": [BAD]}]}]), "error")
add("toplevel_rules_short_circuit", rules_ctx([{"type": "ALL", "conditions": [F]}, {"type": "ALL", "conditions": [BAD]}]),
    "ok")
add("toplevel_rules_no_short_circuit_when_true",
    rules_ctx([{"type": "ALL", "conditions": [T]}, {"type": "ALL", "conditions": [BAD]}]), "error")
add("all_conditions_short_circuit", rules_ctx([{"type": "ALL", "conditions": [F, BAD]}]), "ok")
add("any_conditions_short_circuit", rules_ctx([{"type": "ANY", "conditions": [T, BAD]}]), "ok")
add("none_conditions_short_circuit", rules_ctx([{"type": "NONE", "conditions": [T, BAD]}]), "ok")
add("any_conditions_reach_bad", rules_ctx([{"type": "ANY", "conditions": [F, BAD]}]), "error")
add("later_segment_still_evaluated_after_nomatch",
    rules_ctx([{"type": "ALL", "conditions": [F]}],
              segments_extra={"s2": {"key": "s2", "name": "s2", "rules": [{"type": "ALL", "conditions": [BAD]}]}}),
    "error")

# =============================================================================================
# 5.3: property resolution and coercion
# =============================================================================================
c("literal_trait_wins_over_jsonpath", {"$.identity.identifier": "lit"}, "$.identity.identifier", "EQUAL", "lit", "match")
c("literal_trait_null_falls_back_to_jsonpath", {"$.identity.identifier": None}, "$.identity.identifier", "EQUAL",
  "user-1", "match")
c("jsonpath_object_is_null", {}, "$.identity", "IS_NOT_SET", None, "match")
c("jsonpath_array_like_traits_object_null", {"a": 1}, "$.identity.traits", "IS_SET", None, "nomatch")
c("jsonpath_descendant_name_is_environment_name", {}, "$..name", "EQUAL", "Test Environment", "match")
add("jsonpath_descendant_name_follows_document_order",
    {"features": {"f": feature()}, "environment": ENV, "identity": ident({}),
     "segments": {"s1": {"key": "s1", "name": "s", "rules": [{"type": "ALL", "conditions": [cond("$..name", "EQUAL", "f")]}],
                         "overrides": [feature(value="override", key="2")]}}},
    lambda r: seg_names(r) == ["s"])
c("jsonpath_descendant_enabled", {}, "$..enabled", "EQUAL", "true", "match")
c("invalid_jsonpath_uses_trait_literal", {"$.bad[": "x"}, "$.bad[", "EQUAL", "x", "match")
c("invalid_jsonpath_without_trait_is_null", {}, "$.bad[", "IS_NOT_SET", None, "match")
c("dollar_alone_is_trait_lookup", {"$": "d"}, "$", "EQUAL", "d", "match")
c("bracket_root_is_trait_lookup", {}, "$['identity']", "IS_NOT_SET", None, "match")
c("bracket_root_trait_literal", {"$['identity']": "v"}, "$['identity']", "EQUAL", "v", "match")
c("jsonpath_trait_member", {"age": 30}, "$.identity.traits.age", "EQUAL", "30", "match")
c("jsonpath_trait_bracket_with_space", {"x y": "v"}, "$.identity.traits['x y']", "EQUAL", "v", "match")
c("jsonpath_trait_null_value", {"a": None}, "$.identity.traits.a", "IS_NOT_SET", None, "match")
c("jsonpath_environment_name", {}, "$.environment.name", "EQUAL", "Test Environment", "match")
c("jsonpath_feature_value", {}, "$.features.f.value", "EQUAL", "default", "match")
c("jsonpath_feature_enabled_bool", {}, "$.features.f.enabled", "EQUAL", "FALSE", "match")
c("jsonpath_segments_digit_shorthand_invalid", {}, "$.segments.1.name", "IS_NOT_SET", None, "match", seg_key="1")
c("jsonpath_segments_bracket", {}, "$.segments['1'].name", "EQUAL", "s", "match", seg_key="1")
c("jsonpath_wildcard_first_node", {}, "$.features.*.value", "EQUAL", "default", "match")
c("jsonpath_filter", {}, "$.features[?@.enabled == true].name", "EQUAL", "f", "match")
c("jsonpath_case_sensitive", {}, "$.Identity.identifier", "IS_NOT_SET", None, "match")
c("jsonpath_identity_key_enriched_in_document", {}, "$.identity.key", "EQUAL", "env_user-1", "match")
c("coerce_007_to_int", {"t": "007"}, "t", "EQUAL", "7", "match")
c("coerce_007_in_007_false", {"t": "007"}, "t", "IN", "007", "nomatch")
c("coerce_minus_zero_to_int_0", {"t": "-0"}, "t", "IN", "0", "match")
c("coerce_1_50_to_float", {"t": "1.50"}, "t", "EQUAL", "1.5", "match")
c("coerce_1_10_regex_fails", {"t": "1.10"}, "t", "REGEX", "^1\\.10$", "nomatch")
c("coerce_1_10_regex_repr", {"t": "1.10"}, "t", "REGEX", "^1\\.1$", "match")
c("coerce_123_contains_false", {"t": "123"}, "t", "CONTAINS", "2", "nomatch")
c("coerce_minus_0_0_float", {"t": "-0.0"}, "t", "REGEX", "^-0\\.0$", "match")
c("no_coerce_1e5", {"t": "1e5"}, "t", "EQUAL", "1e5", "match")
c("no_coerce_plus_1", {"t": "+1"}, "t", "CONTAINS", "+", "match")
c("no_coerce_space_1", {"t": " 1"}, "t", "EQUAL", " 1", "match")
c("no_coerce_1_dot", {"t": "1."}, "t", "EQUAL", "1.", "match")
c("no_coerce_dot_5", {"t": ".5"}, "t", "EQUAL", ".5", "match")
c("no_coerce_unicode_digits", {"t": "٣"}, "t", "EQUAL", "3", "nomatch")
c("no_coerce_unicode_digits_str", {"t": "٣"}, "t", "EQUAL", "٣", "match")
c("coerce_huge_int_string", {"t": "123456789012345678901234567890"}, "t", "GREATER_THAN",
  "123456789012345678901234567889", "match")
c("float_trait_1_0_stays_float", {"t": 1.0}, "t", "IN", "1.0", "nomatch")
c("int_trait_in", {"t": 1}, "t", "IN", "1", "match")
c("identifier_coerced_1_50", {}, "$.identity.identifier", "EQUAL", "1.5", "match", identity=ident({}, identifier="1.50"))

# =============================================================================================
# 5.4: operators
# =============================================================================================
for sv, exp in ((" 42 ", "match"), ("+42", "match"), ("4_2", "match"), ("42.0", "nomatch"), ("٤٢", "match"),
                ("\u00a042\u2003", "match"), ("4__2", "nomatch"), ("_42", "nomatch"), ("42_", "nomatch"),
                ("0x2a", "nomatch"), ("", "nomatch"), ("1e1", "nomatch")):
    c(f"int_equal_{sv.encode('unicode_escape').decode()}", {"t": 42}, "t", "EQUAL", sv, exp)
c("int_not_equal_unparseable_is_false", {"t": 5}, "t", "NOT_EQUAL", "x", "nomatch")
c("int_not_equal_parseable", {"t": 5}, "t", "NOT_EQUAL", "6", "match")
c("int_greater_than", {"t": 5}, "t", "GREATER_THAN", "4", "match")
c("int_less_than_inclusive", {"t": 5}, "t", "LESS_THAN_INCLUSIVE", "5", "match")
c("int_big_compare", {"t": 2**64 + 5}, "t", "EQUAL", "18446744073709551621", "match")
c("int_big_negative", {"t": -(2**70)}, "t", "LESS_THAN", "-1180591620717411303423", "match")
c("int_sv_null_false", {"t": 5}, "t", "EQUAL", None, "nomatch")
c("float_equal_nan_false", {"t": 1.5}, "t", "EQUAL", "nan", "nomatch")
c("float_not_equal_nan_true", {"t": 1.5}, "t", "NOT_EQUAL", "nan", "match")
c("float_1e1_equals_10", {"t": 10.0}, "t", "EQUAL", "1e1", "match")
c("float_inf", {"t": 1e300}, "t", "LESS_THAN", "inf", "match")
c("float_infinity_word", {"t": 1e300}, "t", "LESS_THAN", "-Infinity", "nomatch")
c("float_underscore", {"t": 10.5}, "t", "EQUAL", "1_0.5", "match")
c("float_exp_underscore", {"t": 1e10}, "t", "EQUAL", "1e1_0", "match")
c("float_neg_zero_equal_zero", {"t": -0.0}, "t", "EQUAL", "0", "match")
c("float_int_string", {"t": 2.0}, "t", "EQUAL", "2", "match")
c("float_unparseable", {"t": 2.0}, "t", "NOT_EQUAL", "abc", "nomatch")
c("float_whitespace", {"t": 2.5}, "t", "EQUAL", " 2.5\n", "match")
for sv, exp in (("FALSE", "match"), ("0", "match"), ("", "match"), ("false", "nomatch"), ("False", "nomatch"),
                ("true", "match"), (None, "match")):
    c(f"bool_true_equal_{sv}", {"t": True}, "t", "EQUAL", sv, exp)
c("bool_true_greater_than_false", {"t": True}, "t", "GREATER_THAN", "false", "match")
c("bool_false_less_than_true", {"t": False}, "t", "LESS_THAN", "yes", "match")
c("bool_false_equal_false", {"t": False}, "t", "EQUAL", "False", "match")
c("bool_not_equal", {"t": False}, "t", "NOT_EQUAL", "0", "match")
c("str_lexicographic", {"t": "abc"}, "t", "LESS_THAN", "abd", "match")
c("str_lexicographic_codepoint", {"t": "a"}, "t", "GREATER_THAN", "B", "match")
c("str_lexicographic_unicode", {"t": "é"}, "t", "GREATER_THAN", "z", "match")
c("str_sv_null_is_None", {"t": "None"}, "t", "EQUAL", None, "match")
c("str_not_equal", {"t": "a"}, "t", "NOT_EQUAL", "b", "match")
c("null_cv_not_equal_false", {}, "t", "NOT_EQUAL", "x", "nomatch")
c("null_cv_not_contains_false", {}, "t", "NOT_CONTAINS", "x", "nomatch")
c("contains_semver_suffix_false", {"t": "1.2.3:semver"}, "t", "CONTAINS", "1.2.3:semver", "nomatch")
c("contains_empty_true", {"t": "abc"}, "t", "CONTAINS", "", "match")
c("contains_int_false", {"t": 123}, "t", "CONTAINS", "1", "nomatch")
c("contains_sv_null", {"t": "xNoney"}, "t", "CONTAINS", None, "match")
c("contains_case_sensitive", {"t": "Hello"}, "t", "CONTAINS", "hello", "nomatch")
c("not_contains_semver_suffix_plain", {"t": "1.2.3"}, "t", "NOT_CONTAINS", "x:semver", "match")
c("not_contains_int_false", {"t": 5}, "t", "NOT_CONTAINS", "x", "nomatch")
c("not_contains_sv_null", {"t": "None"}, "t", "NOT_CONTAINS", None, "nomatch")
c("regex_anchored_start_only", {"t": "abc"}, "t", "REGEX", "b", "nomatch")
c("regex_prefix", {"t": "abc"}, "t", "REGEX", "ab", "match")
c("regex_int", {"t": 7}, "t", "REGEX", "^7$", "match")
c("regex_float_repr", {"t": 1e16}, "t", "REGEX", "^1e\\+16$", "match")
c("regex_float_1_0", {"t": 1.0}, "t", "REGEX", "^1\\.0$", "match")
c("regex_small_float", {"t": 1e-05}, "t", "REGEX", "^1e-05$", "match")
c("regex_bool", {"t": True}, "t", "REGEX", "^True$", "match")
c("regex_sv_null", {"t": "None"}, "t", "REGEX", None, "match")
c("regex_dollar_before_trailing_newline", {"t": "abc\n"}, "t", "REGEX", "abc$", "match")
c("regex_backreference", {"t": "aa"}, "t", "REGEX", "(a)\\1", "match")
c("regex_lookahead", {"t": "ab"}, "t", "REGEX", "a(?=b)", "match")
c("regex_unicode_digit", {"t": "٣"}, "t", "REGEX", "\\d", "match")
c("regex_inline_ignorecase", {"t": "HELLO"}, "t", "REGEX", "(?i)hello", "match")
c("regex_named_group_python_syntax", {"t": "aa"}, "t", "REGEX", "(?P<x>a)(?P=x)", "match")
c("regex_backslash_Z", {"t": "ab"}, "t", "REGEX", "ab\\Z", "match")
c("regex_dot_no_newline", {"t": "a\nb"}, "t", "REGEX", "a.b", "nomatch")
c("regex_invalid_raises", {"t": "abc"}, "t", "REGEX", "(", "error")
c("regex_invalid_null_cv_no_raise", {}, "t", "REGEX", "(", "nomatch")
c("modulo_numeric_string", {"t": "4"}, "t", "MODULO", "2|0", "match")
c("modulo_negative_python_sign", {"t": -1}, "t", "MODULO", "3|2", "match")
c("modulo_no_epsilon", {"t": 0.3}, "t", "MODULO", "0.1|0.1", "nomatch")
c("modulo_bool_true", {"t": True}, "t", "MODULO", "2|1", "match")
c("modulo_bool_false", {"t": False}, "t", "MODULO", "2|0", "match")
c("modulo_whitespace", {"t": 4}, "t", "MODULO", " 2 | 0 ", "match")
c("modulo_float", {"t": 5.5}, "t", "MODULO", "2|1.5", "match")
c("modulo_three_parts", {"t": 4}, "t", "MODULO", "2|0|0", "nomatch")
c("modulo_one_part", {"t": 4}, "t", "MODULO", "2", "nomatch")
c("modulo_empty", {"t": 4}, "t", "MODULO", "", "nomatch")
c("modulo_null", {"t": 4}, "t", "MODULO", None, "nomatch")
c("modulo_unparseable", {"t": 4}, "t", "MODULO", "a|b", "nomatch")
c("modulo_string_cv", {"t": "abc"}, "t", "MODULO", "2|0", "nomatch")
c("modulo_negative_divisor", {"t": 5}, "t", "MODULO", "-3|-1", "match")
c("modulo_inf_divisor_negative", {"t": -1}, "t", "MODULO", "inf|inf", "match")
c("modulo_inf_divisor_positive", {"t": 1}, "t", "MODULO", "inf|1", "match")
c("modulo_neg_zero_remainder", {"t": -4}, "t", "MODULO", "2|-0.0", "match")
c("modulo_big_int", {"t": 2**64 + 5}, "t", "MODULO", "2|0", "match")
c("modulo_zero_divisor_raises", {"t": 4}, "t", "MODULO", "0|0", "error")
c("modulo_overflow_raises", {"t": 10**400}, "t", "MODULO", "3|1", "error")
c("in_float_never", {"t": 1.5}, "t", "IN", "1.5", "nomatch")
c("in_float_real_array_never", {"t": 1.5}, "t", "IN", [1.5, "1.5"], "nomatch")
c("in_bool_never", {"t": True}, "t", "IN", "True,true,1", "nomatch")
c("in_int_csv", {"t": 7}, "t", "IN", "6,7,8", "match")
c("in_csv_no_trim", {"t": "b"}, "t", "IN", "a, b", "nomatch")
c("in_csv_leading_space_item", {"t": " b"}, "t", "IN", "a, b", "match")
c("in_json_string_mixed_items", {"t": 1}, "t", "IN", '["a", 1]', "match")
c("in_json_string_true_item", {"t": "True"}, "t", "IN", "[true]", "match")
c("in_json_string_float_item", {"t": "1e+16"}, "t", "IN", "[1e16]", "match")
c("in_json_string_null_item", {"t": "None"}, "t", "IN", "[null]", "match")
c("in_json_string_nested_list", {"t": "[1, 2]"}, "t", "IN", "[[1,2]]", "match")
c("in_json_string_invalid_falls_back_to_csv", {"t": "[not json"}, "t", "IN", "[not json,x", "match")
c("in_json_string_leading_space_is_csv", {"t": " [\"a\"]"}, "t", "IN", " [\"a\"]", "match")
c("in_json_string_not_array", {"t": "[1"}, "t", "IN", "[1,2", "match")
c("in_json_object_string_not_list", {"t": "{"}, "t", "IN", "{\"a\": 1}", "nomatch")
c("in_empty_string", {"t": ""}, "t", "IN", "", "match")
c("in_real_array_int_items", {"t": 2}, "t", "IN", [1, 2], "match")
c("in_real_array_bool_item", {"t": "True"}, "t", "IN", [True], "match")
c("in_real_array_float_item", {"t": "1.0"}, "t", "IN", [1.0], "nomatch")
c("in_real_array_float_item_str_trait", {"t": "x1.0"}, "t", "IN", [1.0, "x1.0"], "match")
c("in_real_array_null_item", {"t": "None"}, "t", "IN", [None], "match")
c("in_real_array_nested_list", {"t": "[1, 2]"}, "t", "IN", [[1, 2]], "match")
c("in_real_array_big_int", {"t": 2**64}, "t", "IN", [2**64], "match")
c("in_null_cv", {}, "t", "IN", "None", "nomatch")
c("in_null_value_raises", {"t": "a"}, "t", "IN", None, "error")
c("in_null_value_raises_even_without_cv", {}, "t", "IN", None, "error")
c("in_identity_override_style", {}, "$.identity.identifier", "IN", ["user-0", "user-1"], "match")
c("is_set_empty_string", {"t": ""}, "t", "IS_SET", None, "match")
c("is_set_false_bool", {"t": False}, "t", "IS_SET", "x", "match")
c("is_not_set_missing", {}, "t", "IS_NOT_SET", "", "match")
c("is_not_set_null_trait", {"t": None}, "t", "IS_NOT_SET", None, "match")
c("unknown_operator_false", {"t": "a"}, "t", "BETWEEN", "a", "nomatch")
c("unknown_operator_lowercase", {"t": "a"}, "t", "equal", "a", "nomatch")

# =============================================================================================
# 5.5: semver
# =============================================================================================
for tv, op, sv, exp in (
    ("1.2.3+build", "EQUAL", "1.2.3:semver", "match"),
    ("1.2.3", "EQUAL", "1.2.3+other:semver", "match"),
    # semver 3.1.1 (pinned) anchors with \Z and compiles with re.ASCII: unlike 3.0.4,
    # a trailing "\n" and Unicode digits do NOT parse.
    ("1.2.3\n", "EQUAL", "1.2.3:semver", "nomatch"),
    ("1.2.3\n", "NOT_EQUAL", "1.2.4:semver", "nomatch"),
    ("1.2.٣", "EQUAL", "1.2.3:semver", "nomatch"),
    ("1.2.3-é", "NOT_EQUAL", "1.2.4:semver", "nomatch"),
    ("1.2.3-beta.1", "LESS_THAN", "1.2.3:semver", "match"),
    ("1.0.0-alpha.1", "LESS_THAN", "1.0.0-alpha.beta:semver", "match"),
    ("1.0.0-2", "LESS_THAN", "1.0.0-10:semver", "match"),
    ("1.0.0-alpha", "LESS_THAN", "1.0.0-alpha.1:semver", "match"),
    ("1.0.0-1", "LESS_THAN", "1.0.0-a:semver", "match"),
    ("1.0.0-B", "LESS_THAN", "1.0.0-a:semver", "match"),
    ("1.10.0", "GREATER_THAN", "1.9.0:semver", "match"),
    ("2.0.0", "GREATER_THAN_INCLUSIVE", "2.0.0:semver", "match"),
    ("2.0.0", "NOT_EQUAL", "2.0.1:semver", "match"),
    ("1.2", "EQUAL", "1.2.0:semver", "nomatch"),
    ("v1.2.3", "EQUAL", "1.2.3:semver", "nomatch"),
    ("01.2.3", "EQUAL", "1.2.3:semver", "nomatch"),
    ("1.2.3", "EQUAL", "v1.2.3:semver", "nomatch"),
    ("1.2.3", "EQUAL", "1.2:semver", "nomatch"),
    ("1.2.3", "NOT_EQUAL", "1.2:semver", "nomatch"),
    ("1.2.3", "EQUAL", "1.2.3:SEMVER", "nomatch"),
    ("1.2.3:SEMVER", "EQUAL", "1.2.3:SEMVER", "match"),
    ("1.2.3", "EQUAL", ":semver", "nomatch"),
    ("1.2.3-01", "EQUAL", "1.2.3-01:semver", "nomatch"),
    ("99999999999999999999.0.0", "GREATER_THAN", "1.0.0:semver", "match"),
    ("1.0.0-0001a", "LESS_THAN", "1.0.0-01a:semver", "match"),
    ("1.0.0-00", "LESS_THAN", "1.0.0:semver", "nomatch"),
):
    c(f"semver_{tv!r}_{op}_{sv!r}", {"t": tv}, "t", op, sv, exp)
c("semver_int_cv_false", {"t": 1}, "t", "EQUAL", "1.0.0:semver", "nomatch")

# =============================================================================================
# 5.6 / 5.7: percentage split and hashing
# =============================================================================================
_p = get_hashed_percentage_for_object_ids(["s1", "env_user-1"])
c("pct_exact_threshold_inclusive", {}, "", "PERCENTAGE_SPLIT", repr(_p), "match")
c("pct_just_below_threshold", {}, "", "PERCENTAGE_SPLIT", repr(_p - 1e-9), "nomatch")
c("pct_100_always", {}, "", "PERCENTAGE_SPLIT", "100", "match")
c("pct_0_never_unless_zero", {}, "", "PERCENTAGE_SPLIT", "0", None)
c("pct_property_null_uses_identity_key", {}, None, "PERCENTAGE_SPLIT", repr(_p), "match")
c("pct_missing_trait_false", {}, "t", "PERCENTAGE_SPLIT", "100", "nomatch")
c("pct_no_identity_false", None, "", "PERCENTAGE_SPLIT", "100", "nomatch", identity="absent")
c("pct_unparseable_false", {}, "", "PERCENTAGE_SPLIT", "abc", "nomatch")
c("pct_whitespace_value", {}, "", "PERCENTAGE_SPLIT", " 100 ", "match")
c("pct_inf", {}, "", "PERCENTAGE_SPLIT", "inf", "match")
c("pct_nan", {}, "", "PERCENTAGE_SPLIT", "nan", "nomatch")
c("pct_value_null_raises", {}, "", "PERCENTAGE_SPLIT", None, "error")
c("pct_value_null_no_identity_no_raise", None, "", "PERCENTAGE_SPLIT", None, "nomatch", identity="absent")
_pb = get_hashed_percentage_for_object_ids(["s1", "True"])
c("pct_bool_trait_hashes_True", {"t": True}, "t", "PERCENTAGE_SPLIT", repr(_pb), "match")
c("pct_bool_trait_hashes_True_below", {"t": True}, "t", "PERCENTAGE_SPLIT", repr(_pb - 1e-9), "nomatch")
_pf = get_hashed_percentage_for_object_ids(["s1", "1.1"])
c("pct_float_trait_hashes_repr", {"t": "1.10"}, "t", "PERCENTAGE_SPLIT", repr(_pf), "match")
c("pct_float_trait_hashes_repr_below", {"t": "1.10"}, "t", "PERCENTAGE_SPLIT", repr(_pf - 1e-9), "nomatch")
_p7 = get_hashed_percentage_for_object_ids(["s1", "7"])
_p007 = get_hashed_percentage_for_object_ids(["s1", "007"])
c("pct_jsonpath_key_coerced", None, "$.identity.key", "PERCENTAGE_SPLIT", repr(_p7), "match", identity=ident(key="007"))
c("pct_jsonpath_key_coerced_below", None, "$.identity.key", "PERCENTAGE_SPLIT", repr(_p7 - 1e-9), "nomatch",
  identity=ident(key="007"))
c("pct_empty_property_raw_key", None, "", "PERCENTAGE_SPLIT", repr(_p007), "match", identity=ident(key="007"))
c("pct_empty_property_raw_key_below", None, "", "PERCENTAGE_SPLIT", repr(_p007 - 1e-9), "nomatch",
  identity=ident(key="007"))
_pk = get_hashed_percentage_for_object_ids(["segkey", "env_user-1"])
add("pct_uses_segment_key_not_map_key", {
    "environment": ENV, "identity": ident({}), "features": {"f": feature()},
    "segments": {"mapkey": {"key": "segkey", "name": "s", "rules": [{"type": "ALL", "conditions": [
        cond("", "PERCENTAGE_SPLIT", repr(_pk))]}], "overrides": [feature(value="override", key="2")]}}},
    lambda r: seg_names(r) == ["s"])
add("pct_uses_segment_key_not_map_key_below", {
    "environment": ENV, "identity": ident({}), "features": {"f": feature()},
    "segments": {"mapkey": {"key": "segkey", "name": "s", "rules": [{"type": "ALL", "conditions": [
        cond("", "PERCENTAGE_SPLIT", repr(_pk - 1e-9))]}], "overrides": [feature(value="override", key="2")]}}},
    lambda r: seg_names(r) == [])
# Rehash on exactly 100: ids ["1", "identity_4692"] -> 2.5805161032206443 after retry.
c("pct_rehash_on_100", None, "", "PERCENTAGE_SPLIT", "2.5805161032206443", "match",
  identity=ident(key="identity_4692"), seg_key="1")
c("pct_rehash_on_100_below", None, "", "PERCENTAGE_SPLIT", "2.58051610322064", "nomatch",
  identity=ident(key="identity_4692"), seg_key="1")
_pu = get_hashed_percentage_for_object_ids(["s1", "env_ünïcödé"])
c("pct_unicode_key", None, "", "PERCENTAGE_SPLIT", repr(_pu), "match", identity=ident(identifier="ünïcödé"))
c("pct_unicode_key_below", None, "", "PERCENTAGE_SPLIT", repr(_pu - 1e-9), "nomatch", identity=ident(identifier="ünïcödé"))


# =============================================================================================
# 8.2: multivariate
# =============================================================================================
def mv_ctx(identifier: Any, variants: list, fkey: str = "mvk", override: bool = False, value: Any = "control_value") -> dict:
    fc = feature("mv", value=value, key=fkey, variants=variants)
    ctx: dict = {"environment": ENV, "features": {"mv": fc if not override else feature("mv")}}
    if identifier is not None:
        ctx["identity"] = ident({}, identifier=identifier)
    if override:
        ctx["segments"] = {"s1": {"key": "s1", "name": "s", "rules": [{"type": "ALL"}], "overrides": [fc]}}
    return ctx


def V(value: Any, weight: Any, priority: Any, key: Any = "MISSING") -> dict:
    v = {"value": value, "weight": weight, "priority": priority}
    if key != "MISSING":
        v["key"] = key
    return v


_ID50 = find_identifier("mvk", "env", 4999, "b")   # p == 50.0 exactly
_ID0 = find_identifier("mvk", "env", 0, "z")       # p == 0.0 exactly
_ID_LAST = find_identifier("mvk", "env", 9997, "l")  # p just under 100


def mvflag(r: dict) -> dict:
    return r["flags"]["mv"]


add("mv_boundary_50_half_open", mv_ctx(_ID50, [V("a", 50, 1, "A"), V("b", 50, 2, "B")]),
    lambda r: mvflag(r)["value"] == "b" and mvflag(r)["reason"] == "SPLIT; weight=50")
add("mv_boundary_50_zero_weight_skipped", mv_ctx(_ID50, [V("a", 50, 1, "A"), V("z", 0, 2, "Z"), V("b", 50, 3, "B")]),
    lambda r: mvflag(r)["value"] == "b")
add("mv_boundary_0_zero_weight_first", mv_ctx(_ID0, [V("z", 0, 1, "Z"), V("b", 100, 2, "B")]),
    lambda r: mvflag(r)["value"] == "b")
add("mv_boundary_0_weight_float", mv_ctx(_ID0, [V("a", 1e-05, 1, "A")]),
    lambda r: mvflag(r)["reason"] == "SPLIT; weight=1e-05")
add("mv_no_bucket_control", mv_ctx(_ID50, [V("a", 10, 1, "A")]),
    lambda r: mvflag(r)["variant"] == "control" and mvflag(r)["value"] == "control_value" and mvflag(r)["reason"] == "STATIC")
add("mv_weights_sum_100_last", mv_ctx(_ID_LAST, [V("a", 33.33, 1), V("b", 33.33, 2), V("c", 33.34, 3, "C")]),
    lambda r: mvflag(r)["reason"] == "SPLIT; weight=33.34")
add("mv_weights_sum_99_98_last_control", mv_ctx(_ID_LAST, [V("a", 33.33, 1), V("b", 33.33, 2), V("c", 33.32, 3, "C")]),
    lambda r: mvflag(r)["variant"] == "control")
add("mv_weight_int_reason", mv_ctx(_ID50, [V("a", 100, 1, "A")]), lambda r: mvflag(r)["reason"] == "SPLIT; weight=100")
add("mv_weight_float_reason", mv_ctx(_ID50, [V("a", 100.0, 1, "A")]), lambda r: mvflag(r)["reason"] == "SPLIT; weight=100.0")
add("mv_variant_without_key_null", mv_ctx(_ID50, [V("a", 100, 1)]),
    lambda r: mvflag(r)["variant"] is None and mvflag(r)["value"] == "a")
add("mv_variant_key_empty_string", mv_ctx(_ID50, [V("a", 100, 1, "")]), lambda r: mvflag(r)["variant"] == "")
add("mv_priority_sort", mv_ctx(_ID50, [V("second", 50, 2, "S"), V("first", 50, 1, "F")]),
    lambda r: mvflag(r)["value"] == "second")
add("mv_priority_ties_keep_order", mv_ctx(_ID50, [V("x", 50, 0, "X"), V("y", 50, 0, "Y")]),
    lambda r: mvflag(r)["value"] == "y")
add("mv_priority_huge_ints", mv_ctx(_ID50, [V("x", 50, 2**127 + 1, "X"), V("y", 50, 2**127, "Y")]),
    lambda r: mvflag(r)["value"] == "x")
add("mv_priority_negative", mv_ctx(_ID50, [V("x", 50, 0, "X"), V("y", 50, -1, "Y")]),
    lambda r: mvflag(r)["value"] == "x")
add("mv_no_identity_no_split", mv_ctx(None, [V("a", 100, 1, "A")]),
    lambda r: mvflag(r)["variant"] is None and mvflag(r)["value"] == "control_value")
add("mv_empty_variants_list", mv_ctx(_ID50, []), lambda r: mvflag(r)["variant"] is None)
add("mv_empty_feature_key_still_hashed", mv_ctx("user-1", [V("a", 50, 1, "A"), V("b", 50, 2, "B")], fkey=""))
add("mv_weights_over_100", mv_ctx(_ID50, [V("a", 60, 1, "A"), V("b", 60, 2, "B")]),
    lambda r: mvflag(r)["value"] == "a")
add("mv_segment_override_split_replaces_targeting",
    mv_ctx(_ID50, [V("a", 100, 1, "A")], override=True), lambda r: mvflag(r)["reason"] == "SPLIT; weight=100")
add("mv_segment_override_no_bucket_targeting",
    mv_ctx(_ID50, [V("a", 10, 1, "A")], override=True),
    lambda r: mvflag(r)["reason"] == "TARGETING_MATCH; segment=s" and mvflag(r)["variant"] == "control")
add("mv_value_types_kept", mv_ctx(_ID50, [V(1.0, 100, 1, "A")], value=2**65), lambda r: type(mvflag(r)["value"]) is float)
add("mv_weight_missing_priority_raises", mv_ctx(_ID50, [{"value": "a", "weight": 50}]), "error")
add("mv_weight_missing_priority_no_identity_ok", mv_ctx(None, [{"value": "a", "weight": 50}]), "ok")

# =============================================================================================
# 8.1 / 8.3: overrides, precedence, reasons, metadata
# =============================================================================================


def seg(name: str, overrides: list, rules: Any = "T", key: str = "k", **extra: Any) -> dict:
    s = {"key": key, "name": name,
         "rules": [{"type": "ALL", "conditions": [T]}] if rules == "T" else
         ([{"type": "ALL", "conditions": [F]}] if rules == "F" else rules),
         "overrides": overrides}
    s.update(extra)
    return s


def ov(value: Any, priority: Any = "MISSING", name: str = "f", **extra: Any) -> dict:
    o = feature(name, value=value, key="ov")
    if priority != "MISSING":
        o["priority"] = priority
    o.update(extra)
    return o


def prec_ctx(segments: dict, features: dict | None = None, identity: Any = "default") -> dict:
    ctx: dict = {"environment": ENV}
    if identity == "default":
        ctx["identity"] = ident({"t": "yes"})
    elif identity is not None:
        ctx["identity"] = identity
    ctx["features"] = features if features is not None else {"f": feature()}
    ctx["segments"] = segments
    return ctx


def fval(v: Any) -> Callable[[dict], bool]:
    return lambda r: r["flags"]["f"]["value"] == v and type(r["flags"]["f"]["value"]) is type(v)


add("override_lower_priority_wins", prec_ctx({"a": seg("a", [ov("one", 1)]), "b": seg("b", [ov("zero", 0)])}), fval("zero"))
add("override_tie_first_wins", prec_ctx({"a": seg("a", [ov("A", 1)]), "b": seg("b", [ov("B", 1)])}), fval("A"))
add("override_missing_priorities_first_wins", prec_ctx({"a": seg("a", [ov("A")]), "b": seg("b", [ov("B")])}), fval("A"))
add("override_numeric_beats_missing", prec_ctx({"a": seg("a", [ov("A")]), "b": seg("b", [ov("B", 10**20)])}), fval("B"))
add("override_identity_override_beats_all",
    prec_ctx({"a": seg("a", [ov("A", -5)]), "io": seg("identity_overrides", [ov("IO", -(2**63))],
                                                      rules=[{"type": "ALL", "conditions": [cond("$.identity.identifier", "IN", ["user-1"])]}],
                                                      key="", metadata={"source": "identity_overrides"})}),
    lambda r: r["flags"]["f"]["reason"] == "TARGETING_MATCH; segment=identity_overrides")
add("override_same_segment_twice_first_wins", prec_ctx({"a": seg("a", [ov("A1", 1), ov("A2", 1)])}), fval("A1"))
add("override_same_segment_lower_later", prec_ctx({"a": seg("a", [ov("A1", 1), ov("A2", 0)])}), fval("A2"))
add("override_float_priority", prec_ctx({"a": seg("a", [ov("A", 0.5)]), "b": seg("b", [ov("B", 0)])}), fval("B"))
add("override_negative_zero_priority_tie", prec_ctx({"a": seg("a", [ov("A", 0)]), "b": seg("b", [ov("B", -0.0)])}), fval("A"))
add("override_huge_priority_compare", prec_ctx({"a": seg("a", [ov("A", 2**64 + 1)]), "b": seg("b", [ov("B", 2**64)])}), fval("B"))
add("override_single_null_priority_no_compare", prec_ctx({"a": seg("a", [ov("A", None)])}), fval("A"))
add("override_not_matching_gives_DEFAULT", prec_ctx({"a": seg("a", [ov("A", 1)], rules="F")}),
    lambda r: r["flags"]["f"]["reason"] == "DEFAULT" and r["segments"] == [])
add("override_empty_rules_gives_DEFAULT", prec_ctx({"a": seg("a", [ov("A", 1)], rules=[])}),
    lambda r: r["flags"]["f"]["reason"] == "DEFAULT")
add("no_override_gives_STATIC", prec_ctx({"a": seg("a", [ov("A", 1, name="other")])}),
    lambda r: r["flags"]["f"]["reason"] == "STATIC")
add("override_for_unknown_feature_ignored", prec_ctx({"a": seg("a", [ov("A", 1, name="ghost")])}),
    lambda r: list(r["flags"]) == ["f"] and r["segments"] == [{"name": "a"}])
add("override_metadata_not_inherited",
    prec_ctx({"a": seg("a", [ov("A", 1)])}, features={"f": feature(metadata={"id": 1})}),
    lambda r: "metadata" not in r["flags"]["f"])
add("override_metadata_used", prec_ctx({"a": seg("a", [ov("A", 1, metadata={"id": 9})])}),
    lambda r: r["flags"]["f"]["metadata"] == {"id": 9})
add("feature_metadata_empty_omitted", prec_ctx({}, features={"f": feature(metadata={})}),
    lambda r: "metadata" not in r["flags"]["f"])
add("feature_metadata_nested_echoed", prec_ctx({}, features={"f": feature(metadata={"id": 1, "x": [1.0, {"y": None}]})}),
    lambda r: r["flags"]["f"]["metadata"]["x"][0] == 1.0)
add("segment_metadata_empty_omitted", prec_ctx({"a": seg("a", [], metadata={})}), lambda r: r["segments"] == [{"name": "a"}])
add("segment_metadata_echoed", prec_ctx({"a": seg("a", [], metadata={"id": 3, "source": "api"})}),
    lambda r: r["segments"] == [{"name": "a", "metadata": {"id": 3, "source": "api"}}])
add("segments_in_context_order", prec_ctx({"z": seg("z", []), "a": seg("a", []), "m": seg("m", [], rules="F"), "b": seg("b", [])}),
    lambda r: seg_names(r) == ["z", "a", "b"])
add("segments_duplicate_names", prec_ctx({"x": seg("same", [ov("X", 2)]), "y": seg("same", [ov("Y", 1)])}),
    lambda r: seg_names(r) == ["same", "same"])
add("segment_without_overrides_key", prec_ctx({"a": {"key": "a", "name": "a", "rules": [{"type": "ALL", "conditions": [T]}]}}),
    lambda r: r["segments"] == [{"name": "a"}])
add("segment_overrides_null", prec_ctx({"a": {"key": "a", "name": "a", "rules": [{"type": "ALL", "conditions": [T]}], "overrides": None}}),
    lambda r: r["segments"] == [{"name": "a"}])
add("feature_key_differs_from_name_raises", prec_ctx({}, features={"alias": feature("real")}), "error")
add("feature_key_differs_from_name_overridden",
    prec_ctx({"a": seg("a", [ov("A", 1, name="real")])}, features={"alias": feature("real")}),
    lambda r: list(r["flags"]) == ["real"] and r["flags"]["real"]["value"] == "A")
add("features_order_kept", prec_ctx({}, features={"b": feature("b"), "a": feature("a"), "c": feature("c")}))
add("no_features_key", {"environment": ENV}, lambda r: r == {"flags": {}, "segments": []})
add("features_null", {"environment": ENV, "features": None, "segments": None}, lambda r: r == {"flags": {}, "segments": []})
add("value_types_kept", prec_ctx({}, features={
    "a": feature("a", value=1.0), "b": feature("b", value=-0.0), "c": feature("c", value=2**70),
    "d": feature("d", value=1e16), "e": feature("e", value=None), "g": feature("g", value=True),
    "h": feature("h", value=""), "i": feature("i", value=1e-05), "j": feature("j", value=0)}))
add("caller_supplied_flags_ignored", dict(prec_ctx({"a": seg("a", [], rules=[{"type": "ALL", "conditions": [
    cond("$.flags.f.value", "EQUAL", "fake")]}])}), flags={"f": {"name": "f", "enabled": True, "value": "fake",
                                                                "reason": "STATIC", "variant": None}}),
    lambda r: r["segments"] == [])
add("caller_supplied_flags_first_key", {"flags": {"x": 1}, **prec_ctx({})})

# =============================================================================================
# 8.5: $.flags dependencies
# =============================================================================================


def dep_ctx(features: dict, segments: dict) -> dict:
    return {"environment": ENV, "identity": ident({"t": "yes"}), "features": features, "segments": segments}


add("flags_dependency_enabled", dep_ctx(
    {"a": feature("a", enabled=True), "b": feature("b", value="b0")},
    {"s": seg("s", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.enabled", "EQUAL", "true")]}])}),
    lambda r: r["flags"]["b"]["value"] == "b1")
add("flags_dependency_on_overridden_feature", dep_ctx(
    {"a": feature("a", value="a0"), "b": feature("b", value="b0")},
    {"sa": seg("sa", [ov("a1", name="a")]),
     "sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.value", "EQUAL", "a1")]}])}),
    lambda r: r["flags"]["b"]["value"] == "b1")
add("flags_dependency_reason", dep_ctx(
    {"a": feature("a"), "b": feature("b", value="b0")},
    {"sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.reason", "EQUAL", "STATIC")]}])}),
    lambda r: r["flags"]["b"]["value"] == "b1")
add("flags_dependency_variant", dep_ctx(
    {"a": feature("a", key="mvk", variants=[V("x", 100, 1, "XK")]), "b": feature("b", value="b0")},
    {"sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.variant", "EQUAL", "XK")]}])}),
    lambda r: r["flags"]["b"]["value"] == "b1")
add("flags_cycle_two", dep_ctx(
    {"a": feature("a", value="a0"), "b": feature("b", value="b0")},
    {"sa": seg("sa", [ov("a1", name="a")], rules=[{"type": "ALL", "conditions": [cond("$.flags.b.enabled", "EQUAL", "true")]}]),
     "sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.enabled", "EQUAL", "true")]}])}),
    lambda r: r["flags"]["a"]["reason"] == "ERROR; code=CIRCULAR_DEPENDENCY")
add("flags_self_dependency", dep_ctx(
    {"a": feature("a", value="a0")},
    {"sa": seg("sa", [ov("a1", name="a")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.enabled", "IS_NOT_SET", None)]}])}),
    lambda r: r["flags"]["a"]["reason"] == "ERROR; code=CIRCULAR_DEPENDENCY" and r["segments"] == [])
add("flags_cycle_three", dep_ctx(
    {"a": feature("a"), "b": feature("b"), "c": feature("c")},
    {"sa": seg("sa", [ov("a1", name="a")], rules=[{"type": "ANY", "conditions": [cond("$.flags.b.enabled", "IS_SET", None)]}]),
     "sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ANY", "conditions": [cond("$.flags.c.enabled", "IS_SET", None)]}]),
     "sc": seg("sc", [ov("c1", name="c")], rules=[{"type": "ANY", "conditions": [cond("$.flags.a.enabled", "IS_SET", None)]}])}))
add("flags_cycle_plus_independent_segment", dep_ctx(
    {"a": feature("a"), "b": feature("b"), "c": feature("c")},
    {"sa": seg("sa", [ov("a1", name="a")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.value", "IS_SET", None)]}]),
     "sc": seg("sc", [ov("c1", name="c"), ov("a2", name="a", priority=5)]),
     "sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.c.value", "EQUAL", "c1")]}])}))
add("flags_absent_feature_is_not_set", dep_ctx(
    {"b": feature("b", value="b0")},
    {"sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.ghost.enabled", "IS_NOT_SET", None)]}])}),
    lambda r: r["flags"]["b"]["value"] == "b1")
add("flags_absent_feature_equal_false", dep_ctx(
    {"b": feature("b", value="b0")},
    {"sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.ghost.enabled", "NOT_EQUAL", "x")]}])}),
    lambda r: r["flags"]["b"]["value"] == "b0")
add("flags_wildcard_no_match", dep_ctx(
    {"a": feature("a"), "b": feature("b", value="b0")},
    {"sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.*.enabled", "IS_SET", None)]}])}),
    lambda r: r["flags"]["b"]["value"] == "b0")
add("flags_bracket_root_is_trait", dep_ctx(
    {"a": feature("a"), "b": feature("b", value="b0")},
    {"sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$['flags']['a']['enabled']", "IS_SET", None)]}])}),
    lambda r: r["flags"]["b"]["value"] == "b0")
add("flags_bracket_member", dep_ctx(
    {"my feature": feature("my feature"), "b": feature("b", value="b0")},
    {"sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags['my feature'].enabled", "EQUAL", "true")]}])}),
    lambda r: r["flags"]["b"]["value"] == "b1")
add("flags_descendant_enabled", dep_ctx(
    {"a": feature("a", enabled=False), "b": feature("b", value="b0")},
    {"sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$..enabled", "EQUAL", "false")]}])}),
    lambda r: r["flags"]["b"]["value"] == "b1")
add("flags_dependency_segment_memoised_order", dep_ctx(
    {"a": feature("a"), "b": feature("b"), "c": feature("c")},
    {"s1": seg("s1", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.enabled", "EQUAL", "true")]}]),
     "s2": seg("s2", [ov("a1", name="a", enabled=False)]),
     "s3": seg("s3", [ov("c1", name="c")], rules=[{"type": "ALL", "conditions": [cond("$.flags.b.value", "EQUAL", "b1")]}])}))
add("flags_dependency_raising_inside", dep_ctx(
    {"a": feature("a"), "b": feature("b")},
    {"sa": seg("sa", [ov("a1", name="a")], rules=[{"type": "ALL", "conditions": [BAD]}]),
     "sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.a.enabled", "IS_SET", None)]}])}),
    "error")
add("flags_feature_key_mismatch_dependency", dep_ctx(
    {"alias": feature("a"), "b": feature("b")},
    {"sa": seg("sa", [ov("a1", name="a")], rules="F"),
     "sb": seg("sb", [ov("b1", name="b")], rules=[{"type": "ALL", "conditions": [cond("$.flags.alias.enabled", "IS_SET", None)]}])}))

# =============================================================================================
# 10: errors
# =============================================================================================
add("error_missing_property", rules_ctx([{"type": "ALL", "conditions": [{"operator": "EQUAL", "value": "x"}]}]), "error")
add("error_huge_numeric_trait_string", rules_ctx([{"type": "ALL", "conditions": [cond("big", "IS_SET", None)]}],
                                                 traits={"big": "9" * 4301}), "error")
add("ok_numeric_trait_string_4300_digits", rules_ctx([{"type": "ALL", "conditions": [cond("big", "IS_SET", None)]}],
                                                     traits={"big": "9" * 4300}), "ok")
add("ok_huge_numeric_trait_string_unread", rules_ctx([{"type": "ALL", "conditions": [T]}],
                                                     traits={"t": "yes", "big": "9" * 5000}), "ok")
add("error_modulo_float_zero_divisor", rules_ctx([{"type": "ALL", "conditions": [cond("n", "MODULO", "0.0|1")]}]), "error")


# =============================================================================================
# Number spellings (7.3): both sides read the same JSON text; Python sees json.loads kinds/values
# =============================================================================================
from spelled_json import loads_spelled  # noqa: E402

add("spelling_weight_3E1_is_float", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "identity": {"identifier": "%s"}, "features": {"mv": '
    '{"key": "mvk", "name": "mv", "enabled": true, "value": "c", "variants": [{"value": "a", "weight": 3E1, "priority": 1}, '
    '{"value": "b", "weight": 70, "priority": 2}]}}}' % _ID50),
    lambda r: r["flags"]["mv"]["reason"] == "SPLIT; weight=70")
add("spelling_weight_100_00", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "identity": {"identifier": "%s"}, "features": {"mv": '
    '{"key": "mvk", "name": "mv", "enabled": true, "value": "c", "variants": [{"value": "a", "weight": 100.00, "priority": 1}]}}}' % _ID50),
    lambda r: r["flags"]["mv"]["reason"] == "SPLIT; weight=100.0")
add("spelling_weight_exponent", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "identity": {"identifier": "%s"}, "features": {"mv": '
    '{"key": "mvk", "name": "mv", "enabled": true, "value": "c", "variants": [{"value": "a", "weight": 0.5E2, "priority": 1}, '
    '{"value": "b", "weight": 5.0e1, "priority": 2}]}}}' % _ID50),
    lambda r: r["flags"]["mv"]["reason"] == "SPLIT; weight=50.0")
add("spelling_float_trait_1_50_regex", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "identity": {"identifier": "u", "traits": {"t": 1.50}}, '
    '"segments": {"s1": {"key": "s1", "name": "s", "rules": [{"type": "ALL", "conditions": '
    '[{"property": "t", "operator": "REGEX", "value": "^1\\\\.5$"}]}]}}}'),
    lambda r: seg_names(r) == ["s"])
add("spelling_float_trait_0_30000000000000001", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "identity": {"identifier": "u", "traits": {"t": 0.30000000000000001}}, '
    '"segments": {"s1": {"key": "s1", "name": "s", "rules": [{"type": "ALL", "conditions": '
    '[{"property": "t", "operator": "REGEX", "value": "^0\\\\.3$"}]}]}}}'),
    lambda r: seg_names(r) == ["s"])
add("spelling_minus_zero_int_trait", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "identity": {"identifier": "u", "traits": {"t": -0}}, '
    '"segments": {"s1": {"key": "s1", "name": "s", "rules": [{"type": "ALL", "conditions": '
    '[{"property": "t", "operator": "IN", "value": "0"}]}]}}}'),
    lambda r: seg_names(r) == ["s"])
add("spelling_float_trait_hash", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "identity": {"identifier": "u", "traits": {"t": 1.10E0}}, '
    '"segments": {"s1": {"key": "s1", "name": "s", "rules": [{"type": "ALL", "conditions": '
    '[{"property": "t", "operator": "PERCENTAGE_SPLIT", "value": "%r"}]}]}}}' % _pf),
    lambda r: seg_names(r) == ["s"])
add("spelling_in_array_float_item", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "identity": {"identifier": "u", "traits": {"t": "1.5"}}, '
    '"segments": {"s1": {"key": "s1", "name": "s", "rules": [{"type": "ALL", "conditions": '
    '[{"property": "$.identity.identifier", "operator": "IN", "value": [1.50, "u"]}]}]}}}'),
    lambda r: seg_names(r) == ["s"])
add("spelling_value_echo", loads_spelled(
    '{"environment": {"key": "env", "name": "n"}, "features": {"f": {"key": "1", "name": "f", "enabled": true, '
    '"value": 1.50E+1, "metadata": {"w": -0.0e0, "i": -0}}}}'))

# =============================================================================================
# Found by the random differential run (kept as named regressions)
# =============================================================================================
add("found_flags_key_first_descendant_query", {
    "flags": {}, "environment": {"key": "007", "name": "prod"},
    "segments": {"seg-0": {"key": "seg-0", "name": "s", "rules": [{"type": "ALL", "conditions": [
        cond("$..name", "CONTAINS", "od")]}]}}},
    lambda r: seg_names(r) == [])  # the lazy `flags` mapping sits first and yields a null node
add("found_flags_key_middle_descendant_enabled", {
    "environment": ENV, "flags": {}, "features": {"f": feature(enabled=False)},
    "segments": {"s1": {"key": "s1", "name": "s", "rules": [{"type": "ALL", "conditions": [
        cond("$..enabled", "IS_NOT_SET", None)]}]}}},
    lambda r: seg_names(r) == ["s"])
c("found_jsonpath_value_function_raises", {"n": 1}, "$.identity.traits[?value(@) == 'a']", "IS_SET", None, "error")
c("found_jsonpath_filter_bool_lt_number", {"b": False}, "$.identity.traits[?@ < 10.5]", "IS_SET", None, "match")
c("found_jsonpath_filter_bool_eq_number", {"b": True}, "$.identity.traits[?@ == 1]", "IS_SET", None, None)
c("found_regex_conditional_group", {"t": "ab"}, "t", "REGEX", "(a)(?(1)b|c)", "match")
c("found_regex_named_unicode_escape", {"t": "ü"}, "t", "REGEX", "\\N{LATIN SMALL LETTER U WITH DIAERESIS}", "match")
