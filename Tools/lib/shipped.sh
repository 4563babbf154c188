# The build Lyre ships and measures: release, the Swift runtime linked in (--static-swift-stdlib), stripped.
# Sourced by Tools/package, which installs these files in the .debs, and Tools/bench, which measures them, so
# that a figure Tools/bench prints is the installed program's (issue 30: "the shipped build is the measured one").
#
# lyre_build_shipped: builds lyred and lyre in $LYRE_SHIPPED_BUILD and leaves the stripped programs in $LYRE_SHIPPED.
#
# Linked by lld, for what it does that gold does not, each measured by `Tools/bench footprint` (lyred playing a
# paired session: 36.3 MB RSS with Swift's default link, 31.7 MB with lld and the first two flags, 25.0 MB with
# the code in the order it runs):
#   -z pack-relative-relocs: the relative relocations in the compact DT_RELR form (glibc 2.36, Debian 12), 22 KB
#     where .rela.dyn was 2.7 MB, every page of which the loader read at each start;
#   --no-export-dynamic: the Swift runtime's static link arguments (static-stdlib-args.lnk) export every symbol of
#     the program, 33 207 of them, whose table (1.1 MB with its strings and hash) the loader searches for each
#     symbol it binds; nothing looks a symbol of lyred or lyre up by name, so none is exported;
#   --symbol-ordering-file Tools/lib/shipped.order: the functions lyred runs, then those only lyre play runs, each in
#     the order they first run (written by `Tools/bench footprint --order`; a # line parts the two). On a fault in
#     the program's code the kernel maps the 64 KiB around it (fault-around), so code RSS is the 64 KiB windows
#     touched, however little of each runs: lyred touched 6.9 MB of code spread over some 200 windows. Packed, its
#     code mapping holds 14.1 MB where it held 20.3 MB. The compiler's -function-sections (Swift's and C's) puts each
#     function in a section of its own, which is what the linker can move. A function the file does not name (code
#     changed since it was written) keeps its place: the file goes stale, never wrong. (Swift skips the code
#     generation of a module whose IR is unchanged, whatever the flags: a build path made before -function-sections
#     needs its *.swift.o removed once.)
LYRE_SHIPPED_BUILD=.build-lld  # a build path of its own: lld and these flags rebuild every module
LYRE_SHIPPED=$LYRE_SHIPPED_BUILD/shipped

lyre_build_shipped() {
  local product
  # SwiftPM runs the version's prebuild command only when it plans the build anew: forget the plan, so that the
  # programs carry the commit's version.
  rm -f "$LYRE_SHIPPED_BUILD/release/description.json"
  mkdir -p "$LYRE_SHIPPED"
  for product in lyred lyre; do
    # The build does not know the order file as an input of the link: a program older than the file is linked anew.
    if [[ Tools/lib/shipped.order -nt $LYRE_SHIPPED_BUILD/release/$product ]]; then rm -f "$LYRE_SHIPPED_BUILD/release/$product"; fi
    swift build -c release --static-swift-stdlib --build-path "$LYRE_SHIPPED_BUILD" --product "$product" \
      -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
      -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic \
      -Xlinker --symbol-ordering-file="$PWD/Tools/lib/shipped.order" -Xlinker --no-warn-symbol-ordering 2>&1 \
      | { grep -v "prohibited flag(s)" || true; } >&2
    install -m 0755 "$LYRE_SHIPPED_BUILD/release/$product" "$LYRE_SHIPPED/$product"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$LYRE_SHIPPED/$product"
  done
}
