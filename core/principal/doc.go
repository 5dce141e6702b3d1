// Package principal turns an authenticated identity into the Kafka
// principal that ACLs and quotas name ("User:alice"): from a client
// certificate through ssl.principal.mapping.rules (KIP-371), from a
// certificate's subject alternative names (a Strata extension), and from a
// SASL authorization id. It follows Kafka's KafkaPrincipal,
// SecurityUtils.parseKafkaPrincipal, SslPrincipalMapper and
// DefaultKafkaPrincipalBuilder.
//
// # What it owns
//
//   - Principal, Parse and Anonymous (User:ANONYMOUS).
//   - ParseRules: the ssl.principal.mapping.rules value, split and parsed
//     with Kafka's own grammar, so a value Kafka accepts splits into the
//     same rules and one it refuses is refused; plus SAN:DNS:, SAN:URI:,
//     SAN:EMAIL: and SAN:IP: rules that read a SAN instead of the DN.
//   - Rules.Map / MapDN: first matching rule wins, DEFAULT is the whole DN,
//     none matching is ErrNoMatchingRule (Kafka's NoMatchingRule).
//   - FormatRFC2253: a DER Name rendered as Java's X500Principal.getName()
//     renders it, the string Kafka's rules see.
//   - FromCertificate, FromIdentity and FromSASL: the one entry point per
//     authentication kind.
//
// # Java regular expressions on RE2
//
// Rule patterns are java.util.regex patterns; Strata runs them on Go's RE2
// and accepts only the constructs that mean the same in both, refusing the
// rest when the rules are parsed (ErrUnsupportedRegex with the reason),
// never when a certificate arrives: backreferences (\1, \k<name>), octal
// escapes, lookahead and lookbehind, atomic groups, possessive
// quantifiers, inline flags ((?i) folds ASCII only in Java and Unicode in
// RE2, (?m) and (?U) differ too; write [Cc][Nn] as Kafka's own examples
// do), nested classes and intersections, \p{..}, \b, \B, \Z, \G, \R, \X,
// \h, \v and a '{' that starts no repetition. Java's '.' (which also
// stops at \r, U+0085, U+2028, U+2029) and \s (which includes \x0B) are
// rewritten to their Java meaning. Java's '$' also matches before a final
// line terminator; RE2 cannot, so a name ending with one is refused
// (ErrUnmappableName) rather than mapped differently.
//
// Replacements are Java's Matcher.appendReplacement ($1, ${name}, \$),
// after Kafka's escapeLiteralBackReferences (a $N beyond the pattern's
// groups is literal text, with Kafka's off-by-one when there are several),
// and are applied with Java's String.replaceAll semantics, which also
// replace an empty match right after another ("RULE:(.*)/x$1/" maps "ab"
// to "xabx" in Kafka, and here). A replacement Java would throw on is
// refused at parse time. /L and /U case the result as Java's
// toLowerCase/toUpperCase(Locale.ENGLISH) do (full Unicode case mapping,
// via golang.org/x/text/cases).
//
// # Where Strata is stricter than Kafka
//
// An empty principal type or name is refused (Kafka accepts "User:"), so
// a rule whose result is empty fails the authentication; so do names and
// DN values that are not valid UTF-8. A replacement Java would throw on
// is refused when the rules are parsed, not at the first matching
// certificate. A rules value with text Kafka's splitter skips (a line
// terminator after a rule, which makes Kafka drop that rule silently) is
// refused. Everything else Kafka accepts splits and maps the same here,
// within the regular-expression subset above.
//
// # What it leaves to the caller
//
// Reading certificate files, verifying chains (crypto/tls does), choosing
// which listener's rules apply, and closing a connection whose mapping
// fails. It does no I/O, keeps no state and is deterministic.
package principal
