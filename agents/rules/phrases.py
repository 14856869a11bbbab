"""Bilingual phrase tables of the offline model: what customers write and what it answers."""

from __future__ import annotations

import re

from baton_kafka.agents.languages import HAN_RE
from baton_kafka.agents.rules.matching import normalize
from baton_kafka.schemas.stages import Demand

_CJK_RE = HAN_RE
_EN = r"(?<![a-z0-9])(?:{})(?![a-z0-9])"


def _rx(en: str, zh: str) -> re.Pattern[str]:
    return re.compile(f"{_EN.format(en)}|{zh}" if zh else _EN.format(en))


# key: (English pattern, Chinese pattern, English label, English predicate, Chinese label)
PROBLEMS: dict[str, tuple[str, str, str, str, str]] = {
    "fire": (
        r"smok\w*|fire|flames?|burn\w*|sparks?|sparking|melt\w*|explod\w*",
        r"冒烟|着火|起火|烧焦|火花|爆炸|烧了",
        "smoke or fire hazard", "is smoking or caught fire", "冒烟起火",
    ),
    "shock": (
        r"electric shock|shocked me|shocks?|electrocut\w*", r"漏电|触电|电到",
        "electric shock hazard", "gives electric shocks", "漏电",
    ),
    # Before "battery": a charger that overheats and stops charging is first a heat problem.
    "overheat": (
        r"overheat\w*|too hot|very hot|really hot|extremely hot|gets (?:very |so |really )?hot"
        r"|getting (?:very |so |really )?hot|hot to (?:the )?touch|heats? up too much",
        r"过热|发烫|烫手|很烫|特别烫|非常烫|太烫|好烫|烫得",
        "overheating", "overheats and gets too hot", "过热发烫",
    ),
    "leaking": (
        r"leak\w*|dripping|drips|seep\w*|spills? (?:out|everywhere)",
        r"漏水|漏了(?![一两几个件])|渗水|漏液|漏油|漏气|滴水|渗漏|往外漏",
        "leaking", "is leaking", "漏水",
    ),
    # Before "not_delivered": "没收到退款" is about the money, not the parcel.
    "refund_missing": (
        r"(?:havent|have not|hasnt|has not|didnt|did not|never|still not|not yet) (?:yet )?"
        r"(?:received|got|gotten|seen|been (?:given|issued|paid)) (?:my |the |a |any )?"
        r"(?:refund|money back)|not (?:yet |been )?(?:been )?refunded|still not refunded"
        r"|refund (?:still )?(?:hasnt|has not|didnt|did not|never|isnt|is not) (?:yet )?"
        r"(?:arrived|come|come through|reached|appeared|landed)|no refund yet|still no refund",
        r"没收到退款|未收到退款|退款(?:还|一直)?(?:没|未)(?:到|收到|退)|(?:还)?(?:没|未)到账"
        r"|还没退(?!货)|没退(?:款|钱|给|回)|钱(?:还|一直)?没(?:退|到|回)",
        "refund not received", "has not been refunded yet", "退款还没到账",
    ),
    "not_delivered": (
        r"not (?:been |yet )?(?:delivered|arrived|received)|(?:hasnt|has not|havent|have not"
        r"|didnt|did not|never) (?:yet )?(?:arrived|received|got|come|came|shown up|showed up"
        r"|turned up|been delivered)"
        r"|still not here|where is my (?:order|package|parcel)|not delivered"
        r"|(?:hasnt|has not|havent|have not|isnt|is not|wasnt|was not|not) (?:yet |been )?"
        r"(?:yet |been )?(?:shipped|dispatched|sent out)|not shipped"
        r"|still (?:isnt|is not|arent|are not|not) here|(?:still )?(?:shows?|showing|says|saying)"
        r" (?:as |its |it is )?(?:still )?in transit|stuck (?:in transit|at (?:the )?(?:depot"
        r"|warehouse|customs|hub))|tracking (?:hasnt|has not|didnt|did not|isnt|is not) "
        r"(?:moved|updated|changed|updating)|no tracking updates?"
        r"|lost in (?:the )?(?:post|mail|transit)|(?:parcel|package|order|delivery|shipment) "
        r"(?:was |is |got |has been )?lost|never (?:got|came|showed up)",
        r"没收到|没有收到|还没到|未收到|没到货|还没收到|没有到|没发货|还没发货|未发货|不发货|没送到"
        r"|没有送到|未送达|还在路上|一直在路上|迟迟不到|一直没到|还没来|物流.{0,6}(?:没更新"
        r"|没有更新|不更新|没动|没变)|没有物流信息|丢件|(?:快递|包裹|件)(?:被)?(?:弄)?丢了"
        r"|显示丢失",
        "not delivered", "has not been delivered", "还没有收到",
    ),
    "wrong_item": (
        r"wrong (?:item|product|model|size|colou?r|one|version|variant|style)|not what i ordered"
        r"|sent me the wrong|not the (?:one|colou?r|size|model|item) i ordered"
        r"|different (?:colou?r|model|item|product) (?:than|from|to) (?:what )?i ordered",
        r"发错|错发|不是我买的|货不对|寄错|颜色不对|型号不对|款式不对|不是我要的|和图片不一样",
        "wrong item", "arrived as the wrong item", "发错了商品",
    ),
    # Before "damaged": "时好时坏的" is a flickering screen, not a broken arrival.
    "display": (
        r"flicker\w*|screen (?:keeps |is |was )?(?:flashing|blinking|flashes|blinks)"
        r"|(?:black|blank) screen|screen (?:keeps |is |has )?(?:going|goes|went|turns|turning"
        r"|turned|gone) (?:black|blank|dark|white)|dead pixels?|lines (?:on|across) the "
        r"(?:screen|display)|(?:screen|display) (?:is |keeps )?(?:glitch\w*|garbled|flashing)"
        r"|touch ?screen (?:is )?(?:unresponsive|not responding)",
        r"闪屏|闪烁|屏幕.{0,4}闪|(?:一直|老是|总是|不停地?)闪|黑屏|花屏|白屏|绿屏|屏幕.{0,2}(?:条纹|横线"
        r"|竖线)|坏点|显示(?:异常|不正常|有问题)|触屏(?:失灵|不灵)|触摸(?:失灵|不灵)",
        "screen flickering or display fault", "has a flickering or faulty screen",
        "屏幕闪烁或显示异常",
    ),
    # Before "damaged": a split sole is wear, not damage in transit.
    "coming_apart": (
        r"(?:coming|came|come|falling|fell|fall|falls) apart|split (?:sole|seam|open|apart)"
        r"|(?:soles?|seams?|stitching|heels?) (?:has |have |is |are )?(?:split|splitting"
        r"|separat\w*|peel\w*|unstitched|unglued|(?:come |came |coming )?(?:loose|undone|off))"
        r"|peeling|peeled off|separat(?:ed|ing) from|delaminat\w*|unglued|unstitched"
        r"|(?:ripped|torn|burst) seams?|fray\w*",
        r"开胶|脱胶|开线|脱线|掉底|鞋底.{0,4}(?:掉|开|裂|脱|分离)|鞋跟.{0,2}(?:掉|断)|分层|掉皮|起皮",
        "coming apart", "is coming apart", "开胶开线",
    ),
    "damaged": (
        r"damaged|cracked|cracks?|dented|scratched|shattered|smashed|arrived broken|chipped"
        r"|crushed|bent",
        r"破损|碎了|裂了|裂开|裂纹|裂痕|有裂|碎裂|划痕|划伤|刮花|压坏|摔坏|磕碰|磕坏|凹陷|压扁|(?<!时)坏的",
        "arrived damaged", "arrived damaged", "到货破损",
    ),
    "missing_parts": (
        r"missing|incomplete|not included|parts? (?:are |is )?missing"
        r"|(?:didnt|did not) come with|only (?:got|received) (?:one|part|half)",
        r"少了|缺少|少件|缺件|漏发|没有配件|少发|漏寄|少寄|配件不全|缺(?:了)?配件",
        "missing parts", "is missing parts", "缺少配件",
    ),
    "overcharged": (
        r"overcharg\w*|charged (?:me )?twice|double charged|billed twice|extra charge"
        r"|charged (?:me )?(?:double|two times|the wrong (?:amount|price)|too much)"
        r"|paid twice|duplicate (?:charge|payment)|wrong (?:amount|price) charged",
        r"多扣|扣了两次|重复扣款|多收|扣款错误|扣错|付了两次|重复支付|多付",
        "overcharged", "was overcharged", "多扣了钱",
    ),
    "drifting": (
        r"drift\w*|moves? on its own|ghost (?:input|touch)\w*", r"漂移|自己乱动|自己动",
        "drifting", "is drifting", "摇杆漂移",
    ),
    "noise": (
        r"nois\w*|loud|buzz\w*|rattl\w*|squeak\w*|grind\w*|clicking|clunk\w*|clank\w*|knocking"
        r"|whin(?:e|es|ing)|humming|hiss\w*|crackl\w*|screech\w*|squeal\w*|whirr\w*",
        r"噪音|异响|杂音|声音很大|响声|声音(?:特别|非常|太|好|超|很)?大|咔咔|嘎吱|吱吱|嗡嗡|咯吱|滋滋"
        r"|哒哒|咚咚|哐哐|(?:很|特别|非常|太)吵|吵得|刺耳|响个不停|一直响",
        "noise", "makes a strange noise", "有噪音",
    ),
    "battery": (
        r"battery|wont charge|not charging|does not charge|doesnt charge|dies quickly"
        r"|(?:will not|cant|cannot|can not) charge|stopped charging|no longer charges"
        r"|(?:wont|doesnt|does not|not) hold(?:ing)? (?:a )?charge|drains (?:fast|quickly)",
        r"电池|充不进电|不充电|充不了电|续航|充不上电|充不进去|不能充电|无法充电|没法充电|掉电快"
        r"|耗电(?:很|特别|太)?快|不蓄电",
        "battery fault", "does not charge or hold a charge", "无法充电或续航差",
    ),
    # Before "broken": a heater that runs but stays cold is more than "not working".
    "no_heat": (
        r"(?:not|doesnt|does not|wont|will not|isnt|is not|stopped|no longer|never) "
        r"(?:heat\w*|warm\w* up|get(?:ting|s)? (?:hot|warm))|no heat|blow\w* cold(?: air)?"
        r"|(?:stays|staying) cold|(?:isnt|is not|arent|are not|not) (?:hot|warm)(?: enough)?"
        r"|lukewarm",
        r"不热|不发热|不加热|不制热|不出热风|不出热气|没有热风|没热风|不升温|加热不了|热不起来|不够热"
        r"|温度上不去|只出冷风|吹冷风|出冷风",
        "not heating", "is not heating up", "不发热",
    ),
    "broken": (
        r"broken|broke|not working|doesnt work|does not work|stopped working|wont turn on"
        r"|wont start|dead|faulty|defective|malfunction\w*|does not turn on|doesnt turn on"
        r"|no sound|(?:wont|will not|doesnt|does not) (?:power on|switch on|boot)"
        r"|keeps (?:turning|shutting|switching) off|unresponsive"
        r"|(?:not|isnt|is not|stopped) cooling|(?:doesnt|does not|wont|will not) cool|not spinning",
        r"坏了|不工作|不能用|用不了|开不了机|不开机|打不开|故障|失灵|没反应|不亮|不转|没声音|没有声音"
        r"|无法使用|没法用|不好使|罢工|启动不了|不启动|无法开机|自动关机|死机|不制冷|不出水|停转",
        "not working", "is not working", "坏了，无法正常使用",
    ),
    "late": (
        r"late|delay\w*|overdue|taking forever|slow (?:delivery|shipping)"
        r"|taking (?:so |too )long",
        r"太慢|很慢|延迟|迟迟|太久|慢",
        "delayed delivery", "is delayed", "配送延迟",
    ),
    "fit": (
        r"too (?:small|big|large|tight|loose|narrow|wide|short|long)|doesnt fit|does not fit"
        r"|(?:runs?|running) (?:small|large|big)|(?:heel|foot) slips? out|pinch\w*",
        r"尺码不合适|太小|太大|不合脚|不合身|偏大|偏小|挤脚|磨脚|太紧|太松|码数不对",
        "wrong fit", "does not fit", "尺码不合适",
    ),
    "quality": (
        r"poor quality|bad quality|fake|counterfeit|cheaply made|poorly made|low quality|flimsy"
        r"|not as described|looks used|second hand|knock ?off|fad(?:ed|ing)|shr[au]nk"
        r"|colou?r (?:ran|runs|bleed\w*)|pilling",
        r"质量差|质量问题|假货|次品|做工差|做工粗糙|劣质|质量不好|二手|翻新|用过的|起球|掉色|褪色|缩水"
        r"|与描述不符",
        "quality problem", "has a quality problem", "有质量问题",
    ),
    "unwanted": (
        r"changed my mind|dont want it|no longer need|dont need it|no longer want"
        r"|ordered (?:it |this |them )?by (?:mistake|accident)|(?:accidentally|mistakenly) ordered",
        r"不想要了|不要了|不需要了|买错了|拍错了|下错单|用不上了",
        "no longer wanted", "is no longer wanted", "不想要了",
    ),
}  # fmt: skip
PROBLEM_RX = {key: _rx(en, zh) for key, (en, zh, *_) in PROBLEMS.items()}
GENERAL = ("needs help with an order", "需要订单方面的帮助")
PROBLEMS["general"] = ("", "", GENERAL[0], "", GENERAL[1])
PROBLEM_BY_LABEL = {label: key for key, row in PROBLEMS.items() for label in (row[2], row[4])}
# The problems that are hazards: a person takes them over, so they have no default demand.
SAFETY = ("fire", "shock")
DELIVERY = ("not_delivered", "late")

# Checked in this order, so "send it back for repair" is a repair, not a refund.
DEMANDS: dict[Demand, re.Pattern[str]] = {
    "cancel": _rx(r"cancel\w*", r"取消|撤销订单|撤单"),
    "exchange": _rx(
        r"exchange\w*|replac\w*|swap|a new one|another one", r"换货|换一个|换个|换新|更换|调换"
    ),
    "repair": _rx(r"repair\w*|fix\w*|mend|warranty", r"维修|修理|修好|保修|能修|修"),
    "refund": _rx(
        r"refund\w*|money back|reimburs\w*|return\w*|send it back", r"退款|退钱|退货|退掉|退回"
    ),
    "compensation": _rx(r"compensat\w*|voucher|coupon|make it up", r"赔偿|补偿|赔|优惠券|代金券"),
    "complaint": _rx(
        r"complain\w*|unacceptable|manager|supervisor|terrible service", r"投诉|差评|举报"
    ),
    "information": _rx(
        r"how long|when (?:will|can|does|is|do)|where is|wheres|status|track|tracking|eta"
        r"|any update|update on|how much longer",
        r"多久|什么时候|何时|哪里|到哪|查询|物流|进度|状态|几天|怎么样了|单号",
    ),
}
# Asking for news with no request of its own: it continues what was asked before, if anything.
NEWS = _rx(
    r"any news|news (?:on|about)|picked up|(?:arrived|shipped|received|gone out|come back) yet"
    r"|did you (?:get|receive)|have you (?:received|got)",
    r"收到了吗|到了吗|发了吗|发出来了吗|有进展|好了没|好了吗",
)
NEGATED = re.compile(
    r"(?:(?:dont|do not|not|no|instead of|rather than)\s+(?:want\s+)?(?:an?\s+|the\s+|to\s+)?)$"
    r"|(?:不要|不想|不用|不需要)$"
)
# Longer than any negation NEGATED matches in normalized text, where every run of spaces is a
# single space: the longest, "rather than want the ", has 21 characters.
NEGATION_REACH = 32
DEFAULT_DEMAND: dict[str, Demand] = {
    "not_delivered": "information", "late": "information", "wrong_item": "exchange",
    "damaged": "exchange", "missing_parts": "exchange", "fit": "exchange",
    "overcharged": "refund", "unwanted": "refund", "leaking": "repair", "broken": "repair",
    "drifting": "repair", "noise": "repair", "battery": "repair", "quality": "repair",
    "overheat": "exchange", "refund_missing": "information", "display": "repair",
    "coming_apart": "exchange", "no_heat": "repair",
}  # fmt: skip
EARLIER = _rx(
    r"the order i asked about|i asked about|earlier|before|previous\w*|last time|that order"
    r"|same order|my other order",
    r"之前|上次|那个订单|刚才|前面说的|以前问",
)
CLAUSE_EN: dict[str, str] = {
    "refund": "they want a refund", "exchange": "they want an exchange",
    "repair": "they want it repaired", "compensation": "they want compensation",
    "cancel": "they want to cancel the order", "complaint": "they want to file a complaint",
    "information": "they want to know the status", "other": "they need help",
}  # fmt: skip
CLAUSE_ZH: dict[str, str] = {
    "refund": "希望退款", "exchange": "希望换货", "repair": "希望维修",
    "compensation": "希望获得赔偿", "cancel": "希望取消订单", "complaint": "要求投诉处理",
    "information": "想了解处理进度", "other": "需要帮助",
}  # fmt: skip
RETURN_LOGISTICS = re.compile(
    r"return (?:shipping|label|postage|parcel)|send it back|寄回|运费|邮费"
)

# Said when the chosen action does not itself restate what the customer asked for.
DEMAND_ACK: dict[str, tuple[str, str]] = {
    "refund": ("I understand you would like a refund.", "了解到您希望退款。"),
    "exchange": ("I understand you would like an exchange.", "了解到您希望换货。"),
    "repair": ("I understand you would like it repaired.", "了解到您希望维修。"),
    "compensation": ("I understand you are asking for compensation.", "了解到您希望获得赔偿。"),
    "cancel": ("I understand you would like to cancel the order.", "了解到您希望取消订单。"),
    "complaint": ("I have recorded your complaint.", "已记录您的投诉。"),
    "information": (
        "I understand you would like an update on the status.",
        "了解到您想了解处理进度。",
    ),
}
NOUN = {
    "refund": ("refund", "退款"),
    "exchange": ("exchange", "换货"),
    "repair": ("repair", "维修"),
}

STATUS = {
    "pending": ("pending payment", "待付款"), "paid": ("paid, not yet shipped", "已付款，未发货"),
    "shipped": ("shipped", "已发货"), "delivered": ("delivered", "已签收"),
    "cancelled": ("cancelled", "已取消"), "refunded": ("refunded", "已退款"),
    "returned": ("returned", "已退货"), "lost": ("lost in transit", "运输中丢失"),
}  # fmt: skip
ACTIONS: dict[str, tuple[str, str]] = {
    "safety": (
        "For your safety, please stop using it and unplug it now. I have passed your case to a "
        "specialist colleague, who will contact you shortly.",
        "为了您的安全，请立即停止使用并断开电源。我已将您的情况转交专员处理，专员会尽快与您联系。",
    ),
    "legal": (
        "I have passed your case to a senior colleague, who will contact you shortly.",
        "我已将您的情况转交资深同事处理，他们会尽快与您联系。",
    ),
    "no_order": (
        "I could not find a matching order for your {what} on your account. Could you please "
        "send me the order number so I can look into it?",
        "我没有在您的账户中找到与{what}匹配的订单。请提供订单号，以便我为您进一步核实。",
    ),
    "closed": (
        "Order {oid} is already {status}, so it cannot be refunded again. If something is "
        "still wrong, please tell me and I will check it for you.",
        "订单 {oid} 的状态是{status}，无法再次退款。如果还有其他问题，请告诉我，我会为您核实。",
    ),
    "cancel_full": (
        "I will cancel order {oid} and refund the full {money} to your original payment method.",
        "我会为您取消订单 {oid}，并将 {money} 全额退回原支付账户。",
    ),
    "refund_return": (
        "Please send it back with the prepaid return label we will email you; we will refund up "
        "to {money} {turn}.",
        "请使用我们邮件发送的预付退货标签寄回商品；我们会在{turn}退款，金额最多 {money}。",
    ),
    "refund_transit": (
        "Order {oid} is still in transit; if it does not arrive within 3 business days, we will "
        "refund up to {money}.",
        "订单 {oid} 仍在运输途中；如果 3 个工作日内仍未送达，我们会为您退款，金额最多 {money}。",
    ),
    "refund_lost": (
        "The parcel appears to be lost, so we will refund up to {money} right away.",
        "包裹疑似丢失，我们会立即为您退款，金额最多 {money}。",
    ),
    "exchange": (
        "Please send it back with the prepaid label we will email you; we will ship a "
        "replacement {turn}, at no cost to you.",
        "请使用我们邮件发送的预付标签寄回商品；我们会在{turn}免费为您寄出新品。",
    ),
    "repair": (
        "We can repair it under warranty: we will email you a prepaid shipping label, and "
        "repairs usually take {turn}.",
        "我们可以为您提供保修维修：我们会通过邮件发送预付寄件标签，维修一般需要{turn}。",
    ),
    "compensation": (
        "We can offer compensation of {comp} for the trouble, {channel}.",
        "我们可以为您提供 {comp} 的补偿，{channel}。",
    ),
    "cancel_shipped": (
        "Order {oid} has already shipped, so it can no longer be cancelled; you can refuse the "
        "delivery or return it after it arrives for a refund of up to {money}.",
        "订单 {oid} 已发货，无法取消；您可以拒收，或收到后退货，退款金额最多 {money}。",
    ),
    "cancel_delivered": (
        "Order {oid} has already been delivered, so it cannot be cancelled, but you can return "
        "it for a refund of up to {money}.",
        "订单 {oid} 已签收，无法取消，但您可以申请退货，退款金额最多 {money}。",
    ),
    "time_repair": (
        "A repair usually takes {turn}, plus 2-3 days to ship it back to you.",
        "维修一般需要{turn}，寄回还需要 2-3 天。",
    ),
    "time_refund": (
        "Refunds are issued {turn}.",
        "退款一般会在{turn}到账。",
    ),
    "time_exchange": (
        "A replacement ships {turn}.",
        "新品一般会在{turn}寄出。",
    ),
    "in_transit": (
        "Order {oid} is on its way{carrier} and should arrive within a few days.",
        "订单 {oid} 正在运输途中{carrier}，预计几天内送达。",
    ),
    "not_shipped": (
        "Order {oid} is paid and will ship soon; you will get a tracking number as soon as it "
        "leaves our warehouse.",
        "订单 {oid} 已付款，即将发货；出库后您会收到物流单号。",
    ),
    "investigate": (
        "Our records show order {oid} as delivered on {delivered}. I have opened an "
        "investigation with the carrier, and you will get {turn}.",
        "我们的记录显示订单 {oid} 已于 {delivered} 签收。我已向快递公司发起调查，会在{turn}。",
    ),
    "status": ("Order {oid} is currently {status}.", "订单 {oid} 目前的状态是{status}。"),
    "complaint": (
        "I have recorded your complaint about order {oid} and escalated it to our customer care "
        "team; you will get {turn}.",
        "我已记录您对订单 {oid} 的投诉并提交给客户关怀团队，他们会在{turn}您。",
    ),
    "not_covered": (
        "I'm sorry, but under our policy order {oid} cannot get a {remedy} now. If you like, a "
        "colleague can look at the other options with you.",
        "很抱歉，根据我们的政策，订单 {oid} 目前无法{remedy}。"
        "如您需要，同事可以与您一起看看其他方案。",
    ),
    "other": (
        "Please tell me whether you would like a refund, an exchange or a repair, and I will "
        "arrange it right away.",
        "请告诉我您希望退款、换货还是维修，我会立即为您安排。",
    ),
}
# How a remedy and a money channel are named to the customer (English, Chinese).
REMEDY_NAMES: dict[str, tuple[str, str]] = {
    "refund": ("refund", "退款"),
    "exchange": ("exchange", "换货"),
    "repair": ("repair", "维修"),
    "compensation": ("compensation", "补偿"),
    "cancellation": ("cancellation", "取消"),
}
CHANNELS: dict[str, tuple[str, str]] = {
    "original_payment": ("paid to your original payment method", "将退回原支付账户"),
    "store_credit": ("as store credit on your account", "以购物金形式存入您的账户"),
    "voucher": ("as a voucher", "以优惠券形式发放"),
}
CLOSING = (
    "If you have any other questions, just reply to this message.",
    "如有其他问题，请随时回复。",
)


def is_chinese(text: str) -> bool:
    """True when ``text`` contains Han characters: the rules read it with their Chinese words."""
    return bool(_CJK_RE.search(text))


def hits(rx: re.Pattern[str], norm: str) -> list[str]:
    """What ``rx`` finds in normalized text, leaving out negated finds ("not a refund").

    Only the ``NEGATION_REACH`` characters before a find can negate it, so the scan is linear
    in the text: searching the whole text before every find took seconds on a long ticket.
    """
    return [
        m.group(0)
        for m in rx.finditer(norm)
        if not NEGATED.search(norm, max(0, m.start() - NEGATION_REACH), m.start())
    ]


def problem_key(text: str | None) -> str | None:
    """The problem table's key for a label or a free text, or None when none applies."""
    if not text:
        return None
    if text in PROBLEM_BY_LABEL:
        return PROBLEM_BY_LABEL[text]
    norm = normalize(text)
    return next((key for key, rx in PROBLEM_RX.items() if rx.search(norm)), None)


def pad(name: str) -> str:
    """``name`` for Chinese text: spaced off where it starts or ends in Latin letters or digits."""

    def edge(ch: str) -> str:
        return " " if ch.isascii() and ch.isalnum() else ""

    return f"{edge(name[:1])}{name}{edge(name[-1:])}"
