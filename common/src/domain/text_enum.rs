//! Enums the database stores as TEXT and the API shows as the same words.
//!
//! `text_enum!` declares a fieldless enum with one spelling per variant and
//! gives it: `ALL`, `as_str`, `parse`, `Display`, serde (that spelling),
//! `utoipa::ToSchema` (a string schema listing every spelling), and
//! `sqlx::Type`/`Encode`/`Decode` for Postgres as TEXT (arrays of it too, for
//! `= ANY($1)`). A value the database holds that is not one of the spellings
//! is a decode error, never a silent default.

macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            // `tt`, not `literal`: a `literal` fragment reaches the derives wrapped
            // in an invisible group, and utoipa then ignores the `rename`.
            $( $(#[$vmeta:meta])* $variant:ident = $text:tt ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash,
            ::serde::Serialize, ::serde::Deserialize, ::utoipa::ToSchema,
        )]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant ),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// Every spelling, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The spelling stored in the database and shown by the API.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            /// The value spelled exactly `s`.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::sqlx::Type<::sqlx::Postgres> for $name {
            fn type_info() -> ::sqlx::postgres::PgTypeInfo {
                <&str as ::sqlx::Type<::sqlx::Postgres>>::type_info()
            }

            fn compatible(ty: &::sqlx::postgres::PgTypeInfo) -> bool {
                <&str as ::sqlx::Type<::sqlx::Postgres>>::compatible(ty)
            }
        }

        impl ::sqlx::postgres::PgHasArrayType for $name {
            fn array_type_info() -> ::sqlx::postgres::PgTypeInfo {
                <&str as ::sqlx::postgres::PgHasArrayType>::array_type_info()
            }

            fn array_compatible(ty: &::sqlx::postgres::PgTypeInfo) -> bool {
                <&str as ::sqlx::postgres::PgHasArrayType>::array_compatible(ty)
            }
        }

        impl<'q> ::sqlx::Encode<'q, ::sqlx::Postgres> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut ::sqlx::postgres::PgArgumentBuffer,
            ) -> ::std::result::Result<::sqlx::encode::IsNull, ::sqlx::error::BoxDynError> {
                <&str as ::sqlx::Encode<'q, ::sqlx::Postgres>>::encode(self.as_str(), buf)
            }
        }

        impl<'r> ::sqlx::Decode<'r, ::sqlx::Postgres> for $name {
            fn decode(
                value: ::sqlx::postgres::PgValueRef<'r>,
            ) -> ::std::result::Result<Self, ::sqlx::error::BoxDynError> {
                let s = <&str as ::sqlx::Decode<'r, ::sqlx::Postgres>>::decode(value)?;
                Self::parse(s).ok_or_else(|| {
                    format!(concat!("not a ", stringify!($name), ": {:?}"), s).into()
                })
            }
        }
    };
}

pub(crate) use text_enum;
