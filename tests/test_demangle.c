/* SPDX-License-Identifier: MIT */
/*
 * Rust names (core/rustdemangle.c): v0 and legacy symbols as rustfilt
 * (rustc-demangle's alternate form) writes them, taken from rustc 1.95's
 * own libraries and a test program; names that are not Rust's (C, C++)
 * and malformed ones (cut short, back-references that loop or point
 * forwards, nesting past the limit) come back untouched; output cut to the
 * buffer; vms__demangle tries Rust first.
 */
#include "check.h"
#include "core/demangle.h"

#include <string.h>

static const struct { const char *in, *want; } cases[] = {
    /* v0: closures, generic functions, impls, trait impls, shims */
    { "_RNCNvCsfq2Zq5gqAK1_2v04main0B3_", "v0::main::{closure#0}" },
    { "_RINvCsfq2Zq5gqAK1_2v04deephEB2_", "v0::deep::<u8>" },
    { "_RNvMNtCsairCCGeQF1y_12rustc_expand6configNtB2_17StripUnconfigured8cfg_true",
      "<rustc_expand::config::StripUnconfigured>::cfg_true" },
    { "_RNSNvMs8_NtCsgEmfK2I1SDS_4core3numo15overflowing_div5reify", "<u128>::overflowing_div::{shim:reify#0}" },
    { "_RINvMNtCsgEmfK2I1SDS_4core3stre4findcECs7BI5CoEw5O8_13fluent_bundle", "<str>::find::<char>" },
    /* types: dyn with a binder and an associated type, fn pointers, arrays, pointers, slices, tuples, never */
    { "_RNvXs_NtCsgEmfK2I1SDS_4core3anyDNtB4_3AnyEL_NtNtB6_3fmt5Debug3fmt", "<dyn core::any::Any as core::fmt::Debug>::fmt" },
    { "_RINvNtCsgEmfK2I1SDS_4core3ptr13drop_in_placeINtNtCslNYArtu3iFV_5alloc5boxed3BoxDG_INtNtNtB4_3ops8function5FnMut"
      "TRL0_eEEp6OutputbEL_EECslKGqiwnqz1t_17rustc_codegen_ssa",
      "core::ptr::drop_in_place::<alloc::boxed::Box<dyn for<'a> core::ops::function::FnMut<(&'a str,), Output = bool>>>" },
    { "_RNvYFEuINtNtNtCsgEmfK2I1SDS_4core3ops8function6FnOnceuE9call_onceCsfq2Zq5gqAK1_2v0",
      "<fn() as core::ops::function::FnOnce<()>>::call_once" },
    { "_RNvMs3_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVecTOhFUKCBN_EuENtNtCsjrHSEGnQ3l9_3std5alloc6SystemE8grow_oneB13_",
      "<alloc::raw_vec::RawVec<(*mut u8, unsafe extern \"C\" fn(*mut u8)), std::alloc::System>>::grow_one" },
    { "_RNvXsa_NtCsgEmfK2I1SDS_4core5arrayAhj4_NtNtB7_3fmt5Debug3fmtCs5FxD4tM6viY_14rustc_metadata",
      "<[u8; 4] as core::fmt::Debug>::fmt" },
    { "_RNvXsp_NtCsgEmfK2I1SDS_4core3fmtPhNtB5_5Debug3fmtCsjsaRIQT377H_7memmap2", "<*const u8 as core::fmt::Debug>::fmt" },
    { "_RNvXs1h_NtCsgEmfK2I1SDS_4core3fmtQShNtB6_5Debug3fmtCsgY6Mt91CT9J_14rustc_demangle",
      "<&mut [u8] as core::fmt::Debug>::fmt" },
    { "_RNvXs1H_NtCsgEmfK2I1SDS_4core3fmtTNtNtCsjyvvofjlheH_10rustc_span6def_id8CrateNumENtB6_5Debug3fmtCshb4CxotJIr4_15"
      "rustc_interface",
      "<(rustc_span::def_id::CrateNum,) as core::fmt::Debug>::fmt" },
    { "_RNvXs1g_NtCsgEmfK2I1SDS_4core3fmtRzNtB6_5Debug3fmtCs5FxD4tM6viY_14rustc_metadata", "<&! as core::fmt::Debug>::fmt" },
    { "_RINvCs_4test3fooFG0_RL0_hEuE", "test::foo::<for<'a, 'b> fn(&'b u8)>" },
    /* constants; past 64 bits in hex */
    { "_RINvCs_4test3fooKj4_E", "test::foo::<4>" },
    { "_RINvCs_4test3fooKb1_E", "test::foo::<true>" },
    { "_RINvCs_4test3fooKc61_E", "test::foo::<'a'>" },
    { "_RINvCs_4test3fooKan1_E", "test::foo::<-1>" },
    { "_RINvMs2_NtCshg5UprtI8ZK_4jiff4spanNtB6_4Span15try_days_rangedINtNtNtB8_4util8rangeint5ri128Knn800000000000000000"
      "00000000000000_Kn7fffffffffffffffffffffffffffffff_EEB8_",
      "<jiff::span::Span>::try_days_ranged::<jiff::util::rangeint::ri128<-0x80000000000000000000000000000000, "
      "0x7fffffffffffffffffffffffffffffff>>" },
    /* suffixes: a static's index kept, LLVM's dropped */
    { "_RNvCs_4test3foo.0", "test::foo.0" },
    { "_RINvCs3Wn5k6Pa3dh_8thin_vec10alloc_sizeINtNtCs4Al3Pcq2HqC_11rustc_infer6traits10ObligationNtNtNtCsdadwybgsbvk"
      "_12rustc_middle2ty9predicate9PredicateEEBG_.llvm.9362712566924669442",
      "thin_vec::alloc_size::<rustc_infer::traits::Obligation<rustc_middle::ty::predicate::Predicate>>" },
    /* legacy: the hash dropped, "$..$" escapes and ".." decoded */
    { "_ZN2v04main28_$u7b$$u7b$closure$u7d$$u7d$17heda77164ebd481edE", "v0::main::{{closure}}" },
    { "_ZN54_$LT$$LP$$RP$$u20$as$u20$std..process..Termination$GT$6report17h4e3c37ee01407bc5E",
      "<() as std::process::Termination>::report" },
    { "_ZN8overflow4deep17h0123456789abcdefE.llvm.1234", "overflow::deep" },
    /* not Rust's, or not readable: as they are */
    { "main", "main" },
    { "_ZN3foo3barEv", "_ZN3foo3barEv" },                 /* C++: for __cxa_demangle */
    { "_ZN4llvm13ErrorInfoBase2IDE", "_ZN4llvm13ErrorInfoBase2IDE" }, /* no hash: C++ as well */
    { "_ZN3foo17h0123456789abcdefE", "foo" },
    { "_ZN3foo17h0123456789abcdeE", "_ZN3foo17h0123456789abcdeE" },
    { "_RNvCs_4test", "_RNvCs_4test" },                   /* cut short */
    { "_RNvB_3foo", "_RNvB_3foo" },                       /* a back-reference to itself */
    { "_RNvB9_3foo", "_RNvB9_3foo" },                     /* one that points forwards */
    { "_RINvCs_4test3fooKp_E", "_RINvCs_4test3fooKp_E" },
    { "_R", "_R" },
    { "_R1NvCs_4test3foo", "_R1NvCs_4test3foo" },         /* a later version of the scheme */
    { "_RNvCs_4test99999999999999999999999foo", "_RNvCs_4test99999999999999999999999foo" },
};

/* A path nested deeper than any real one: read to the limit, then left as it is. */
static void deep_nesting(void)
{
    static char name[4096], buf[256];
    size_t n = 0;

    n += (size_t)snprintf(name + n, sizeof name - n, "_R");
    for (int i = 0; i < 500; i++)
        n += (size_t)snprintf(name + n, sizeof name - n, "Nv");
    n += (size_t)snprintf(name + n, sizeof name - n, "Cs_1a");
    for (int i = 0; i < 500; i++)
        n += (size_t)snprintf(name + n, sizeof name - n, "1b");
    CHECK(n < sizeof name - 1);
    CHECK(vms__demangle_rust(name, buf, sizeof buf) == name);
}

int main(void)
{
    char buf[512], small[8];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = vms__demangle_rust(cases[i].in, buf, sizeof buf);
        if (strcmp(got, cases[i].want)) {
            fprintf(stderr, "%s\n  gives %s\n  not   %s\n", cases[i].in, got, cases[i].want);
            return 1;
        }
    }
    /* Cut to the buffer, terminated. */
    CHECK(!strcmp(vms__demangle_rust("_RINvCsfq2Zq5gqAK1_2v04deephEB2_", small, sizeof small), "v0::dee"));
    CHECK(vms__demangle_rust("_RNvCs_4test3foo", small, 0) != small);
    CHECK(vms__demangle_rust(NULL, buf, sizeof buf) == NULL);
    deep_nesting();
    /* The general demangler tries Rust first; C++ still goes to libstdc++'s. */
    CHECK(!strcmp(vms__demangle("_ZN8overflow4deep17h0123456789abcdefE", buf, sizeof buf), "overflow::deep"));
    CHECK(!strcmp(vms__demangle_loaded("_RNvCs_4test3foo", buf, sizeof buf), "test::foo"));
    CHECK(!strcmp(vms__demangle("_ZN3foo3barEv", buf, sizeof buf), "foo::bar()"));
    printf("ok: %zu Rust names\n", sizeof cases / sizeof cases[0]);
    return 0;
}
