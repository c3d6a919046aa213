// Package embed reads a Model2Vec-format static embedding model from a
// directory the user put it in (model.safetensors and tokenizer.json) and
// turns a text into one vector: the text's tokens looked up in the model's
// table and averaged (mean pooling), L2-normalised, so that the dot
// product of two vectors is their cosine.
//
// Nothing is fetched: Load reads two files, strictly and within bounds
// (a header of at most MaxHeaderBytes, a table of at most MaxTableBytes,
// dtype F32 or F16, shape [vocab, dim], every token id inside the table),
// and names the file in each error.
package embed
