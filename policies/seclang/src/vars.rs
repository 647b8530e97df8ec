//! The SecLang variables the engine serves: their names, which are
//! collections (keyed, selectable with `VAR:key` or `VAR:/regex/`), and
//! which hold request-wide values. What a variable holds for a request is
//! decided in `tx::values`; this module is only the vocabulary.

macro_rules! variables {
    ($( $var:ident = $name:literal, $kind:ident; )*) => {
        /// A variable a rule can read.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Var { $( $var, )* }

        impl Var {
            /// The variable named `name` (any case).
            pub fn parse(name: &str) -> Option<Var> {
                let upper = name.to_ascii_uppercase();
                match upper.as_str() {
                    $( $name => Some(Var::$var), )*
                    _ => None,
                }
            }

            /// The canonical name.
            pub fn name(self) -> &'static str {
                match self { $( Var::$var => $name, )* }
            }

            /// Whether it is a collection of keyed values.
            pub fn is_collection(self) -> bool {
                match self { $( Var::$var => Kind::$kind == Kind::Collection, )* }
            }

            /// Every variable, in declaration order.
            pub const ALL: &'static [Var] = &[ $( Var::$var, )* ];
        }
    };
}

#[derive(PartialEq, Eq)]
enum Kind {
    Collection,
    Single,
}

variables! {
    Args = "ARGS", Collection;
    ArgsGet = "ARGS_GET", Collection;
    ArgsPost = "ARGS_POST", Collection;
    ArgsNames = "ARGS_NAMES", Collection;
    ArgsGetNames = "ARGS_GET_NAMES", Collection;
    ArgsPostNames = "ARGS_POST_NAMES", Collection;
    RequestHeaders = "REQUEST_HEADERS", Collection;
    RequestHeadersNames = "REQUEST_HEADERS_NAMES", Collection;
    RequestCookies = "REQUEST_COOKIES", Collection;
    RequestCookiesNames = "REQUEST_COOKIES_NAMES", Collection;
    ResponseHeaders = "RESPONSE_HEADERS", Collection;
    ResponseHeadersNames = "RESPONSE_HEADERS_NAMES", Collection;
    Files = "FILES", Collection;
    FilesNames = "FILES_NAMES", Collection;
    FilesSizes = "FILES_SIZES", Collection;
    MultipartPartHeaders = "MULTIPART_PART_HEADERS", Collection;
    Xml = "XML", Collection;
    Tx = "TX", Collection;
    Ip = "IP", Collection;
    Global = "GLOBAL", Collection;
    Session = "SESSION", Collection;
    User = "USER", Collection;
    Resource = "RESOURCE", Collection;
    Env = "ENV", Collection;
    MatchedVars = "MATCHED_VARS", Collection;
    MatchedVarsNames = "MATCHED_VARS_NAMES", Collection;
    Rule = "RULE", Collection;
    ArgsCombinedSize = "ARGS_COMBINED_SIZE", Single;
    FilesCombinedSize = "FILES_COMBINED_SIZE", Single;
    FullRequestLength = "FULL_REQUEST_LENGTH", Single;
    InboundDataError = "INBOUND_DATA_ERROR", Single;
    OutboundDataError = "OUTBOUND_DATA_ERROR", Single;
    MatchedVar = "MATCHED_VAR", Single;
    MatchedVarName = "MATCHED_VAR_NAME", Single;
    MultipartBoundaryQuoted = "MULTIPART_BOUNDARY_QUOTED", Single;
    MultipartBoundaryWhitespace = "MULTIPART_BOUNDARY_WHITESPACE", Single;
    MultipartCrlfLfLines = "MULTIPART_CRLF_LF_LINES", Single;
    MultipartDataAfter = "MULTIPART_DATA_AFTER", Single;
    MultipartDataBefore = "MULTIPART_DATA_BEFORE", Single;
    MultipartFileLimitExceeded = "MULTIPART_FILE_LIMIT_EXCEEDED", Single;
    MultipartHeaderFolding = "MULTIPART_HEADER_FOLDING", Single;
    MultipartInvalidHeaderFolding = "MULTIPART_INVALID_HEADER_FOLDING", Single;
    MultipartInvalidPart = "MULTIPART_INVALID_PART", Single;
    MultipartInvalidQuoting = "MULTIPART_INVALID_QUOTING", Single;
    MultipartLfLine = "MULTIPART_LF_LINE", Single;
    MultipartMissingSemicolon = "MULTIPART_MISSING_SEMICOLON", Single;
    MultipartStrictError = "MULTIPART_STRICT_ERROR", Single;
    MultipartUnmatchedBoundary = "MULTIPART_UNMATCHED_BOUNDARY", Single;
    MultipartFilename = "MULTIPART_FILENAME", Single;
    MultipartName = "MULTIPART_NAME", Single;
    PathInfo = "PATH_INFO", Single;
    QueryString = "QUERY_STRING", Single;
    RemoteAddr = "REMOTE_ADDR", Single;
    RemoteHost = "REMOTE_HOST", Single;
    RemotePort = "REMOTE_PORT", Single;
    ReqbodyError = "REQBODY_ERROR", Single;
    ReqbodyErrorMsg = "REQBODY_ERROR_MSG", Single;
    ReqbodyProcessor = "REQBODY_PROCESSOR", Single;
    ReqbodyProcessorError = "REQBODY_PROCESSOR_ERROR", Single;
    ReqbodyProcessorErrorMsg = "REQBODY_PROCESSOR_ERROR_MSG", Single;
    RequestBasename = "REQUEST_BASENAME", Single;
    RequestBody = "REQUEST_BODY", Single;
    RequestBodyLength = "REQUEST_BODY_LENGTH", Single;
    RequestFilename = "REQUEST_FILENAME", Single;
    RequestLine = "REQUEST_LINE", Single;
    RequestMethod = "REQUEST_METHOD", Single;
    RequestProtocol = "REQUEST_PROTOCOL", Single;
    RequestUri = "REQUEST_URI", Single;
    RequestUriRaw = "REQUEST_URI_RAW", Single;
    ResponseBody = "RESPONSE_BODY", Single;
    ResponseContentLength = "RESPONSE_CONTENT_LENGTH", Single;
    ResponseContentType = "RESPONSE_CONTENT_TYPE", Single;
    ResponseProtocol = "RESPONSE_PROTOCOL", Single;
    ResponseStatus = "RESPONSE_STATUS", Single;
    ServerAddr = "SERVER_ADDR", Single;
    ServerName = "SERVER_NAME", Single;
    ServerPort = "SERVER_PORT", Single;
    StatusLine = "STATUS_LINE", Single;
    UniqueId = "UNIQUE_ID", Single;
    UrlencodedError = "URLENCODED_ERROR", Single;
    HighestSeverity = "HIGHEST_SEVERITY", Single;
    AuthType = "AUTH_TYPE", Single;
    Duration = "DURATION", Single;
    Time = "TIME", Single;
    TimeEpoch = "TIME_EPOCH", Single;
}

impl Var {
    /// The persistent collections of ModSecurity (`initcol`): here they
    /// last for one transaction.
    pub fn is_persistent(self) -> bool {
        matches!(
            self,
            Var::Ip | Var::Global | Var::Session | Var::User | Var::Resource
        )
    }

    /// Whether a rule may `setvar` into it.
    pub fn is_writable(self) -> bool {
        self == Var::Tx || self.is_persistent()
    }

    /// Whether its values change while a phase runs (so nothing derived
    /// from them is cached across rules).
    pub fn is_dynamic(self) -> bool {
        matches!(
            self,
            Var::Tx
                | Var::MatchedVar
                | Var::MatchedVarName
                | Var::MatchedVars
                | Var::MatchedVarsNames
                | Var::Rule
                | Var::HighestSeverity
                | Var::Duration
                | Var::Time
                | Var::TimeEpoch
                | Var::Env
        ) || self.is_persistent()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_any_case() {
        for v in Var::ALL {
            assert_eq!(Var::parse(&v.name().to_lowercase()), Some(*v));
        }
        assert_eq!(Var::parse("GEO"), None);
        assert!(Var::Args.is_collection());
        assert!(!Var::RequestUri.is_collection());
    }
}
