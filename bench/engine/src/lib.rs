pub mod docgen;
