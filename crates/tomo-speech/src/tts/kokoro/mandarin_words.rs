//! Readings the per-character pinyin table gets wrong: characters with several readings (多音字) in the
//! everyday words a companion says, and words whose second syllable is spoken in the neutral tone. The
//! `pinyin` crate gives each character its most common reading only; these words override it.

/// Characters whose most frequent reading in conversation differs from the crate's first reading.
pub const CHARACTER_READINGS: [(char, &str); 4] = [
    // The structural particle (跑得快, 觉得) far outnumbers 得到.
    ('得', "de5"),
    ('长', "chang2"),
    ('么', "me5"),
    ('哪', "na3"),
];

/// Words (two to four characters) with their syllables, for longest-match lookup.
pub const WORDS: &[(&str, &str)] = &[
    ("银行", "yin2 hang2"),
    ("行业", "hang2 ye4"),
    ("一行", "yi4 hang2"),
    ("睡觉", "shui4 jiao4"),
    ("午觉", "wu3 jiao4"),
    ("觉得", "jue2 de5"),
    ("得到", "de2 dao4"),
    ("获得", "huo4 de2"),
    ("取得", "qu3 de2"),
    ("记得", "ji4 de5"),
    ("值得", "zhi2 de5"),
    ("得分", "de2 fen1"),
    ("不得不", "bu4 de2 bu4"),
    ("长大", "zhang3 da4"),
    ("成长", "cheng2 zhang3"),
    ("校长", "xiao4 zhang3"),
    ("家长", "jia1 zhang3"),
    ("生长", "sheng1 zhang3"),
    ("音乐", "yin1 yue4"),
    ("乐器", "yue4 qi4"),
    ("重新", "chong2 xin1"),
    ("重复", "chong2 fu4"),
    ("还是", "hai2 shi4"),
    ("还有", "hai2 you3"),
    ("还给", "huan2 gei3"),
    ("还钱", "huan2 qian2"),
    ("便宜", "pian2 yi5"),
    ("地方", "di4 fang5"),
    ("东西", "dong1 xi5"),
    ("什么", "shen2 me5"),
    ("怎么", "zen3 me5"),
    ("这么", "zhe4 me5"),
    ("那么", "na4 me5"),
    ("多么", "duo1 me5"),
    ("为什么", "wei4 shen2 me5"),
    ("因为", "yin1 wei4"),
    ("为了", "wei4 le5"),
    ("认为", "ren4 wei2"),
    ("成为", "cheng2 wei2"),
    ("作为", "zuo4 wei2"),
    ("以为", "yi3 wei2"),
    ("了解", "liao3 jie3"),
    ("为止", "wei2 zhi3"),
    ("朋友", "peng2 you5"),
    ("喜欢", "xi3 huan5"),
    ("知道", "zhi1 dao5"),
    ("时候", "shi2 hou5"),
    ("告诉", "gao4 su5"),
    ("谢谢", "xie4 xie5"),
    ("先生", "xian1 sheng5"),
    ("衣服", "yi1 fu5"),
    ("休息", "xiu1 xi5"),
    ("事情", "shi4 qing5"),
    ("漂亮", "piao4 liang5"),
    ("明白", "ming2 bai5"),
    ("舒服", "shu1 fu5"),
    ("认识", "ren4 shi5"),
    ("意思", "yi4 si5"),
    ("客气", "ke4 qi5"),
    ("麻烦", "ma2 fan5"),
    ("聪明", "cong1 ming5"),
    ("高兴", "gao1 xing4"),
    ("行李", "xing2 li5"),
    ("一会儿", "yi2 hui4 er5"),
    ("会计", "kuai4 ji4"),
    ("都市", "du1 shi4"),
    ("首都", "shou3 du1"),
    ("着急", "zhao2 ji2"),
    ("睡着", "shui4 zhao2"),
    ("看着", "kan4 zhe5"),
    ("数学", "shu4 xue2"),
    ("数字", "shu4 zi4"),
    ("好玩", "hao3 wan2"),
    ("爱好", "ai4 hao4"),
    ("好奇", "hao4 qi2"),
    ("和平", "he2 ping2"),
    ("暖和", "nuan3 huo5"),
    ("差不多", "cha4 bu5 duo1"),
    ("出差", "chu1 chai1"),
    ("似的", "shi4 de5"),
    ("目的", "mu4 di4"),
    ("的确", "di2 que4"),
    ("应该", "ying1 gai1"),
    ("答应", "da1 ying5"),
    ("中午", "zhong1 wu3"),
    ("中奖", "zhong4 jiang3"),
    ("要求", "yao1 qiu2"),
    ("只有", "zhi3 you3"),
    ("一只", "yi4 zhi1"),
    ("干净", "gan1 jing4"),
    ("干什么", "gan4 shen2 me5"),
    ("觉醒", "jue2 xing3"),
    ("结果", "jie2 guo3"),
    ("尽管", "jin3 guan3"),
    ("尽量", "jin3 liang4"),
    ("调整", "tiao2 zheng3"),
    ("空调", "kong1 tiao2"),
    ("没有", "mei2 you3"),
    ("没事", "mei2 shi4"),
    ("大夫", "dai4 fu5"),
    ("参加", "can1 jia1"),
    ("晚上", "wan3 shang5"),
    ("早上", "zao3 shang5"),
    ("头发", "tou2 fa5"),
    ("发现", "fa1 xian4"),
    ("理发", "li3 fa4"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tts::kokoro::pinyin_ipa::syllable_to_ipa;

    #[test]
    fn every_entry_has_one_valid_syllable_per_character() {
        for (word, reading) in WORDS {
            let syllables: Vec<&str> = reading.split(' ').collect();
            assert_eq!(syllables.len(), word.chars().count(), "{word}");
            for syllable in syllables {
                assert!(syllable_to_ipa(syllable).is_some(), "{word}: {syllable}");
            }
        }
        for (c, reading) in CHARACTER_READINGS {
            assert!(syllable_to_ipa(reading).is_some(), "{c}: {reading}");
        }
    }
}
