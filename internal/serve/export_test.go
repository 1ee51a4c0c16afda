package serve

// DeclTypes is declTypes, for the external tests.
const DeclTypes = declTypes
