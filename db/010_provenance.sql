-- Where a set version's input came from when it was not the plain built-in input:
-- {"overrides": [{"word_list" | "template_set": name, "builtin": what it replaced,
-- "user": the user's file or folder}]} for `generate --override`; NULL otherwise.
ALTER TABLE stimulus_sets ADD COLUMN IF NOT EXISTS provenance JSON;
