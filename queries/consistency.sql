-- Consistency comparisons over `family`: every comparison the family allows, with what the
-- decision heuristics see (`findings`). stimkit.analysis.consistency turns them into verdicts:
-- a violation must be a tested claim (the difference of the two d, tested on the results'
-- stimuli; or both significant with opposite signs); the heuristics' findings become notes.
--   heuristic: true where agreement is expected but not implied (the results may
--   legitimately differ); false where the two tests measure the same association.
--   missing: the partner test this comparison needs and the family lacks.
-- Results are compared only under the same encoder and alternative, and (but for word vs
-- sentence, where the word test's unit is the word) the same units.
-- alpha: the significance level (default 0.01).
-- ptext: p as printed, `<= floor` when p is the smallest its procedure can give;
-- dtext: d as printed, with its 95% interval where one was computed;
-- umark: `^` after a p that is significant at alpha only with sentences as units.
WITH r AS (SELECT * REPLACE (coalesce(units, CASE WHEN clustered OR context = 'word' THEN 'words' ELSE 'sentences' END) AS units)
           FROM family WHERE coalesce(metric, 'weat') = 'weat'),  -- d and p of WEAT
alpha AS (SELECT coalesce(getvariable('alpha'), 0.01) AS a),
setting AS (SELECT DISTINCT fingerprint, encoder, alternative, units FROM r),

-- C7 (math/arts) and C8 (science/arts) measure nearly the same association (May et al. 2019, section 6).
c7_c8 AS (
    SELECT 'C7 vs C8' AS check_name, false AS heuristic, s.encoder, p.t1 || ' / ' || p.t2 AS tests,
           list_value(r1.result_id, r2.result_id) AS result_ids,
           printf('d %s / %s, p %s%s / %s%s', dtext(r1.effect_size, r1.ci_low, r1.ci_high), dtext(r2.effect_size, r2.ci_low, r2.ci_high),
                  ptext(r1.p_value, r1.min_p), umark(r1.p_value, r1.p_words, r1.units),
                  ptext(r2.p_value, r2.min_p), umark(r2.p_value, r2.p_words, r2.units)) AS detail,
           CASE WHEN r1.result_id IS NULL THEN p.t1 WHEN r2.result_id IS NULL THEN p.t2 END AS missing,
           concat_ws('; ',
               CASE WHEN (r1.p_value <= a) <> (r2.p_value <= a) THEN 'different decision at alpha' END,
               CASE WHEN abs(log10(r1.p_value) - log10(r2.p_value)) >= 2 THEN 'p-values 2+ orders of magnitude apart' END,
               CASE WHEN sign(r1.effect_size) <> sign(r2.effect_size) THEN 'opposite signs of d' END,
               CASE WHEN abs(r1.effect_size - r2.effect_size) >= 0.5 THEN 'd differs by 0.5 or more' END) AS findings
    FROM (VALUES ('weat7', 'weat8'), ('weat7b', 'weat8b'), ('sent-weat7', 'sent-weat8'), ('sent-weat7b', 'sent-weat8b')) p(t1, t2)
    CROSS JOIN setting s CROSS JOIN alpha
    LEFT JOIN r r1 ON r1.test = p.t1 AND r1.fingerprint = s.fingerprint AND r1.alternative IS NOT DISTINCT FROM s.alternative AND r1.units = s.units
    LEFT JOIN r r2 ON r2.test = p.t2 AND r2.fingerprint = s.fingerprint AND r2.alternative IS NOT DISTINCT FROM s.alternative AND r2.units = s.units
    WHERE r1.result_id IS NOT NULL OR r2.result_id IS NOT NULL
),

-- C3 > C4 > C5 use ever smaller sets of the same association: p tends to rise as they shrink.
c345 AS (
    SELECT 'C3/C4/C5' AS check_name, true AS heuristic, s.encoder,
           pre || 'weat3 / ' || pre || 'weat4 / ' || pre || 'weat5' AS tests,
           list_value(r3.result_id, r4.result_id, r5.result_id) AS result_ids,
           printf('p %s%s / %s%s / %s%s', ptext(r3.p_value, r3.min_p), umark(r3.p_value, r3.p_words, r3.units),
                  ptext(r4.p_value, r4.min_p), umark(r4.p_value, r4.p_words, r4.units),
                  ptext(r5.p_value, r5.min_p), umark(r5.p_value, r5.p_words, r5.units)) AS detail,
           CASE WHEN r3.result_id IS NULL THEN pre || 'weat3' WHEN r4.result_id IS NULL THEN pre || 'weat4'
                WHEN r5.result_id IS NULL THEN pre || 'weat5' END AS missing,
           concat_ws('; ',
               CASE WHEN r4.p_value < r3.p_value THEN 'p falls from C3 to C4' END,
               CASE WHEN r5.p_value < r4.p_value THEN 'p falls from C4 to C5' END) AS findings
    FROM (VALUES (''), ('sent-')) prefix(pre) CROSS JOIN setting s
    LEFT JOIN r r3 ON r3.test = pre || 'weat3' AND r3.fingerprint = s.fingerprint AND r3.alternative IS NOT DISTINCT FROM s.alternative AND r3.units = s.units
    LEFT JOIN r r4 ON r4.test = pre || 'weat4' AND r4.fingerprint = s.fingerprint AND r4.alternative IS NOT DISTINCT FROM s.alternative AND r4.units = s.units
    LEFT JOIN r r5 ON r5.test = pre || 'weat5' AND r5.fingerprint = s.fingerprint AND r5.alternative IS NOT DISTINCT FROM s.alternative AND r5.units = s.units
    WHERE coalesce(r3.result_id, r4.result_id, r5.result_id) IS NOT NULL
),

-- A word-level test and a sentence test of the same question should agree in sign and
-- decision. The same question: the same `pair` key in the two test definitions, else the
-- same four word lists (X, Y, A, B: the word test's `list@word` sets, the sentence test's
-- `list@<templates>`). A pair the family holds on some encoder but not on another is
-- `not comparable` there, naming the partner it lacks.
keyed AS (
    SELECT *, CASE WHEN context = 'word' THEN 'word' WHEN context IN ('sentence', 'token') THEN 'sentence' END AS side,
           coalesce('pair ' || pair_key,
                    CASE WHEN len(list_filter(word_lists, lambda x: x IS NOT NULL)) = 4
                         THEN array_to_string(word_lists, ' / ') END) AS question
    FROM r
),
questions AS (
    SELECT question, string_agg(DISTINCT test, ', ' ORDER BY test) FILTER (side = 'word') AS word_tests,
           string_agg(DISTINCT test, ', ' ORDER BY test) FILTER (side = 'sentence') AS sentence_tests
    FROM keyed WHERE question IS NOT NULL AND side IS NOT NULL
    GROUP BY question HAVING count(DISTINCT side) = 2
),
slots AS (
    SELECT DISTINCT k.question, k.fingerprint, k.encoder, k.alternative, q.word_tests, q.sentence_tests
    FROM keyed k JOIN questions q USING (question) WHERE k.side IS NOT NULL
),
word_sentence AS (
    SELECT 'word vs sentence' AS check_name, true AS heuristic, t.encoder,
           coalesce(w.test, t.word_tests) || ' / ' || coalesce(s.test, t.sentence_tests) AS tests,
           list_value(w.result_id, s.result_id) AS result_ids,
           printf('d %s / %s, p %s%s / %s%s', dtext(w.effect_size, w.ci_low, w.ci_high), dtext(s.effect_size, s.ci_low, s.ci_high),
                  ptext(w.p_value, w.min_p), umark(w.p_value, w.p_words, w.units),
                  ptext(s.p_value, s.min_p), umark(s.p_value, s.p_words, s.units)) AS detail,
           CASE WHEN w.result_id IS NULL THEN t.word_tests WHEN s.result_id IS NULL THEN t.sentence_tests END AS missing,
           concat_ws('; ',
               CASE WHEN (w.p_value <= a) <> (s.p_value <= a) THEN 'different decision at alpha' END,
               CASE WHEN sign(w.effect_size) <> sign(s.effect_size) THEN 'opposite signs of d' END) AS findings
    FROM slots t CROSS JOIN alpha
    LEFT JOIN keyed w ON w.question = t.question AND w.side = 'word' AND w.fingerprint = t.fingerprint AND w.alternative IS NOT DISTINCT FROM t.alternative
    LEFT JOIN keyed s ON s.question = t.question AND s.side = 'sentence' AND s.fingerprint = t.fingerprint AND s.alternative IS NOT DISTINCT FROM t.alternative
    WHERE w.result_id IS NOT NULL OR s.result_id IS NOT NULL
),

-- Human against machine translation: the same test in the same language on the same encoder,
-- once on people's translation and once on a machine's: how far the machine moves d. Pairs are
-- tests named alike but for the variant (WEATHub's weathub:<lang>_human:<test> and
-- weathub:<lang>_gt:<test>; `_machine` names a machine translation too) whose sets all record
-- translation = human on the one side and machine on the other (stimulus_sets.translation).
translated AS (
    SELECT r.result_id, any_value(s.translation) AS translation, r.test, r.fingerprint, r.encoder, r.alternative,
           r.clustered, r.language, regexp_replace(r.test, '_(human|gt|machine):', '_*:') AS translated_test
    FROM r, unnest(r.set_versions) AS u(version) JOIN stimulus_sets s ON s.version = u.version
    WHERE regexp_matches(r.test, '_(human|gt|machine):')
    GROUP BY ALL HAVING count(DISTINCT s.translation) = 1 AND any_value(s.translation) IN ('human', 'machine')
),
human_machine AS (
    SELECT 'human vs machine' AS check_name, false AS heuristic, k.encoder,
           coalesce(h.test, replace(k.translated_test, '_*:', '_human:')) || ' / '
               || coalesce(m.test, replace(k.translated_test, '_*:', '_gt:')) AS tests,
           list_value(h.result_id, m.result_id) AS result_ids,
           printf('%s: d %s / %s, p %s / %s', k.language, dtext(h.effect_size, h.ci_low, h.ci_high), dtext(m.effect_size, m.ci_low, m.ci_high), ptext(h.p_value, h.min_p), ptext(m.p_value, m.min_p)) AS detail,
           CASE WHEN h.result_id IS NULL THEN replace(k.translated_test, '_*:', '_human:')
                WHEN m.result_id IS NULL THEN replace(k.translated_test, '_*:', '_gt:') END AS missing,
           concat_ws('; ',
               CASE WHEN (h.p_value <= a) <> (m.p_value <= a) THEN 'different decision at alpha' END,
               CASE WHEN sign(h.effect_size) <> sign(m.effect_size) THEN 'opposite signs of d' END,
               CASE WHEN abs(h.effect_size - m.effect_size) >= 0.5 THEN 'd differs by 0.5 or more' END) AS findings
    FROM (SELECT DISTINCT translated_test, fingerprint, encoder, alternative, clustered, language FROM translated) k
    CROSS JOIN alpha
    LEFT JOIN (SELECT t.translated_test, r.* FROM translated t JOIN r USING (result_id) WHERE t.translation = 'human') h
        ON h.translated_test = k.translated_test AND h.fingerprint = k.fingerprint AND h.alternative IS NOT DISTINCT FROM k.alternative
       AND h.clustered IS NOT DISTINCT FROM k.clustered AND h.language IS NOT DISTINCT FROM k.language
    LEFT JOIN (SELECT t.translated_test, r.* FROM translated t JOIN r USING (result_id) WHERE t.translation = 'machine') m
        ON m.translated_test = k.translated_test AND m.fingerprint = k.fingerprint AND m.alternative IS NOT DISTINCT FROM k.alternative
       AND m.clustered IS NOT DISTINCT FROM k.clustered AND m.language IS NOT DISTINCT FROM k.language
),

-- One test across encoders: do they agree on the direction of the association?
across AS (
    SELECT 'across encoders' AS check_name, true AS heuristic, string_agg(DISTINCT encoder, ', ' ORDER BY encoder) AS encoder,
           test AS tests, list(result_id ORDER BY encoder) AS result_ids,
           printf('%d positive d, %d negative d, %d significant of %d',
                  count(*) FILTER (effect_size > 0), count(*) FILTER (effect_size < 0),
                  count(*) FILTER (p_value <= a), count(*)) AS detail,
           NULL AS missing,
           concat_ws('; ',
               CASE WHEN count(*) FILTER (effect_size > 0 AND p_value <= a) > 0
                     AND count(*) FILTER (effect_size < 0) > 0 THEN 'significant d > 0 for some encoders, d < 0 for others' END,
               CASE WHEN count(*) FILTER (p_value <= a) NOT IN (0, count(*)) THEN 'significant for some encoders only' END) AS findings
    FROM r, alpha
    GROUP BY test, alternative, units, a
    HAVING count(DISTINCT fingerprint) > 1
),

-- One word carries the decision: left out, it flips the decision at alpha (result_influence:
-- d and p without each target and attribute word; the word moving d most where several do).
one_word AS (
    SELECT 'one word' AS check_name, false AS heuristic, r.encoder, r.test AS tests, list_value(r.result_id) AS result_ids,
           printf('d %s, p %s%s; without ''%s'' (%s): d %s, p %s', dtext(r.effect_size, r.ci_low, r.ci_high),
                  ptext(r.p_value, r.min_p), umark(r.p_value, r.p_words, r.units), i.word, i.role,
                  coalesce(printf('%+.2f', i.d_without), 'n/a'), printf('%.2g', i.p_without)) AS detail,
           NULL AS missing, 'the decision at alpha flips without one word (fragile)' AS findings
    FROM r JOIN result_influence i USING (result_id) CROSS JOIN alpha
    WHERE (i.p_without <= a) <> (r.p_value <= a)
    QUALIFY row_number() OVER (PARTITION BY r.result_id ORDER BY abs(i.d_without - r.effect_size) DESC NULLS LAST, i.role, i.word) = 1
)

SELECT check_name, heuristic, encoder, tests, missing, nullif(findings, '') AS findings, detail,
       list_filter(result_ids, lambda x: x IS NOT NULL) AS result_ids
FROM (
    SELECT * FROM c7_c8 UNION ALL SELECT * FROM c345 UNION ALL SELECT * FROM word_sentence UNION ALL SELECT * FROM across
    UNION ALL SELECT * FROM human_machine
    UNION ALL SELECT * FROM one_word
)
ORDER BY check_name, tests, encoder;
