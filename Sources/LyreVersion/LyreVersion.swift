/// Lyre's version, as `Tools/version` prints it: the release, then the commits since and the commit itself
/// (`0.1.0+158.g5815729`), baked in at build time by the LyreVersionPlugin.
public enum LyreVersion {
    public static var current: String { generated }
}
