//! Building blocks for models: parameter initialisers ([`init`]).
//!
//! Layout convention: weights follow PyTorch's, `[out_features, in_features]` for a
//! dense layer and `[out_channels, in_channels, *kernel]` for a convolution; the fans
//! of [`init::fans`] read shapes that way.

pub mod init;
