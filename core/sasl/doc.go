// Package sasl is the server side of SASL authentication for Kafka
// listeners: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677)
// as pure step machines, and the credential derivation of KIP-554
// (AlterUserScramCredentials) and KIP-900 (--add-scram at format time).
//
// # What it owns
//
// A Server, built from a listener's sasl.enabled.mechanisms, a
// Credentials lookup and the environment's randomness, starts a Session
// per connection for the mechanism SaslHandshake names (an unknown or
// disabled one is an *UnsupportedMechanismError carrying the enabled
// list, for UNSUPPORTED_SASL_MECHANISM). Session.Step takes each client
// token (SaslAuthenticate auth_bytes, or the raw tokens after
// SaslHandshake v0) and returns the server's token; when it says done,
// Session.User is the authenticated name. It follows Kafka's
// PlainSaslServer and ScramSaslServer:
//
//   - SCRAM runs github.com/xdg-go/scram's ServerConversation (which
//     parses the messages, unescapes =2C and =3D in the names, checks the
//     nonce, the channel-binding flag and the proof in constant time) with
//     its nonce generator fed from Config.Nonce, so the simulator's seed
//     decides every server token. This package adds what the library
//     leaves to callers: tokens bounded by Config.MaxTokenBytes and valid
//     UTF-8; an authorization id that is empty or the user name (Kafka's
//     rule; there are no proxy users); no client-first extensions (Kafka
//     serves delegation tokens through its tokenauth extension; they are
//     not served here); stored credentials with iterations
//     outside [MinIterations, MaxIterations] (4096–16384, Kafka's
//     ScramMechanism bounds) or bad keys are never used.
//   - PLAIN is parsed strictly (exactly authzid NUL user NUL password,
//     user and password non-empty, authzid empty or the user). PLAIN is
//     verified against the user's SCRAM credentials, not a static
//     sasl.plain.users list: the password's salted form is recomputed with
//     the stored salt and iterations (SCRAM-SHA-512's credential if the
//     user has one, else SCRAM-SHA-256's; only that one is tried) and the
//     stored keys are compared in constant time. So one `strata user
//     create` serves both mechanisms, and no password is stored anywhere.
//     The password is used as its UTF-8 bytes without SASLprep, as Kafka's
//     ScramFormatter does, so credentials made by kafka-configs.sh work.
//
// Every failure is an *AuthenticationError (errors.Is
// ErrAuthenticationFailed, which is kerr.SaslAuthenticationFailed) whose
// text is Kafka's and depends only on the mechanism; its Reason is for
// the server log. Whether a user exists is not revealed by the text, nor
// by the exchange's shape: a SCRAM user without a usable credential gets
// a decoy (salt and keys derived from Config.DecoySecret and the name,
// DefaultSaltBytes of salt and DefaultIterations, as strata's own tools
// make), so the first answer looks like a real user's and the failure
// comes at the proof, as for a wrong password. This is RFC 5802 section
// 9's advice; Kafka's ScramSaslServer instead fails an unknown user at
// the first message. PLAIN runs PBKDF2 against a SCRAM-SHA-512 decoy
// for an unknown user, so a wrong password and an unknown user cost the
// same unless the real credential has other iterations.
//
// DeriveScramCredential turns an upsertion's salted password into the
// stored and server keys the controller records; ValidateScramUpsertion
// gives Kafka's per-user errors (UNACCEPTABLE_CREDENTIAL,
// UNSUPPORTED_SASL_MECHANISM) as errors matching the kerr codes;
// SaltedPassword is PBKDF2 for tools that start from a password.
//
// # What it must never do
//
// It is part of the deterministic core: randomness comes only from
// Config.Nonce, it reads no clock, starts no goroutine and touches no
// network or disk. No token, however malformed, makes it panic. It never
// logs and never returns a password or key in an error.
//
// # What is left to the caller
//
// The SaslHandshake/SaslAuthenticate framing, the 512 KiB pre-auth frame
// cap, closing the connection after a failure (after
// connection.failed.authentication.delay.ms), KIP-368 re-authentication
// (the caller compares mechanism and User of the new session), choosing
// and keeping DecoySecret, the salt's randomness for SaltedPassword, and
// AlterUserScramCredentials' DUPLICATE_RESOURCE and RESOURCE_NOT_FOUND
// checks, which need the request and the image.
package sasl
